/* memo_threads: THREADS threads each start the given programs in turn, each three times in
 * a row (the guard remembers a name decided twice in a row), ROUNDS times, with
 * posix_spawn (even threads) or vfork + execve (odd threads), all at once, so that the
 * guard's exec memo is written and read concurrently (four slots, more paths than slots).
 * Each PATH is prefixed with "+" (must run and exit 0) or "-" (must be refused).
 *
 *   memo_threads THREADS ROUNDS +PATH|-PATH...
 *
 * Prints "THREADS ok=<as expected> wrong=<not as expected>" and, for the first few wrong
 * starts, "WRONG <path> <status or -errno>". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static int rounds, npaths;
static char **paths;
static atomic_int ok, wrong;

static int start(const char *path, int use_vfork) {
    char *argv[] = {(char *)path, NULL};
    pid_t pid;
    if (use_vfork) {
        pid = vfork();
        if (pid == 0) {
            execve(path, argv, environ);
            _exit(200 + (errno & 0x3f));
        }
        if (pid < 0)
            return -errno;
    } else {
        int err = posix_spawn(&pid, path, NULL, NULL, argv, environ);
        if (err)
            return -err;
    }
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -errno;
    if (!WIFEXITED(st))
        return 128 + WTERMSIG(st);
    int code = WEXITSTATUS(st);
    return code >= 200 ? -(code - 200) : code;
}

static void *worker(void *arg) {
    int use_vfork = (int)(long)arg & 1;
    for (int r = 0; r < rounds; r++) {
        /* Three in a row: the second is remembered, the third recalled. */
        for (int i = 0; i < 3 * npaths; i++) {
            const char *p = paths[i / 3];
            int want_run = p[0] == '+';
            int got = start(p + 1, use_vfork);
            if (want_run ? got == 0 : got == -EACCES) {
                atomic_fetch_add(&ok, 1);
            } else if (atomic_fetch_add(&wrong, 1) < 5) {
                printf("WRONG %s %d\n", p, got);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        dprintf(2, "usage: memo_threads THREADS ROUNDS +PATH|-PATH...\n");
        return 99;
    }
    int threads = atoi(argv[1]);
    rounds = atoi(argv[2]);
    paths = argv + 3;
    npaths = argc - 3;
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        return 98;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i))
            return 97;
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("THREADS ok=%d wrong=%d\n", atomic_load(&ok), atomic_load(&wrong));
    return 0;
}
