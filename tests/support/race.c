/* race: swaps a workspace script and a workspace ELF at one path (renameat2 RENAME_EXCHANGE,
 * in a loop on another thread) while starting that path N times, and counts what ran.
 *
 *   race WAY PATH OTHER N       WAY: posix_spawn | execve (fork + execve) | posix_spawn-fd
 *                               (posix_spawn /proc/self/fd/3 while another thread dup2s PATH
 *                               and OTHER onto descriptor 3) | posix_spawn-cwd (posix_spawn ./x
 *                               while another thread changes the cwd between the directories
 *                               PATH and OTHER) | fexecve-fd (fexecve(3) in a fork child while
 *                               another thread of it dup2s PATH and OTHER onto descriptor 3)
 *
 * PATH starts as a script that exits 7 (or a symlink to a copy of this program outside the
 * workspace), OTHER as a copy of this program. Started with --payload, this program exits 42
 * when it runs from a workspace (its /proc/self/exe has a /ws/ component), else 7. Prints:
 *
 *   RACE elf=<workspace ELF runs> script=<allowed runs> refused=<starts that failed>
 *        other=<anything else>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

extern char **environ;
static const char *a, *b;
static atomic_int stop;

static int fd_a = -1, fd_b = -1, cwd_race = 0;

static void *swapper(void *unused) {
    (void)unused;
    while (!atomic_load(&stop)) {
        if (cwd_race) {
            /* posix_spawn-cwd: the cwd is PATH, then OTHER, then PATH... */
            if (chdir(a) || chdir(b))
                return NULL;
        } else if (fd_a >= 0) {
            /* posix_spawn-fd: descriptor 3 is PATH, then OTHER, then PATH... */
            dup2(fd_a, 3);
            dup2(fd_b, 3);
        } else {
            syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--payload")) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n < 0)
            return 96;
        self[n] = 0;
        return strstr(self, "/ws/") ? 42 : 7;
    }
    if (argc != 5) {
        dprintf(2, "usage: race posix_spawn|execve|posix_spawn-fd PATH OTHER N\n");
        return 99;
    }
    int spawn = !strncmp(argv[1], "posix_spawn", 11);
    a = argv[2];
    b = argv[3];
    int fexec = !strcmp(argv[1], "fexecve-fd");
    if (!strcmp(argv[1], "posix_spawn-fd") || fexec) {
        /* Spawn /proc/self/fd/3 while another thread points descriptor 3 at PATH, then at
         * OTHER: the name means what the table says when the kernel reads it. */
        /* Above 3, which is the one swapped. */
        fd_a = fcntl(open(argv[2], O_RDONLY | O_CLOEXEC), F_DUPFD_CLOEXEC, 10);
        fd_b = fcntl(open(argv[3], O_RDONLY | O_CLOEXEC), F_DUPFD_CLOEXEC, 10);
        if (fd_a < 0 || fd_b < 0 || dup2(fd_b, 3) != 3)
            return 95;
        a = "/proc/self/fd/3";
    } else if (!strcmp(argv[1], "posix_spawn-cwd")) {
        /* Spawn ./x while another thread changes the cwd between the directories PATH and
         * OTHER, each holding an x. */
        cwd_race = 1;
        if (chdir(b))
            return 95;
    }
    int n = atoi(argv[4]);
    pthread_t t;
    /* fexecve-fd: each child swaps its own descriptor 3 (a fork copies only its thread). */
    if (!fexec && pthread_create(&t, NULL, swapper, NULL) != 0)
        return 98;
    int elf = 0, script = 0, refused = 0, other = 0;
    const char *spawned = cwd_race ? "./x" : a;
    char *child_argv[] = {(char *)spawned, "--payload", NULL};
    for (int i = 0; i < n; i++) {
        pid_t pid;
        if (spawn) {
            if (posix_spawn(&pid, spawned, NULL, NULL, child_argv, environ) != 0) {
                refused++;
                continue;
            }
        } else {
            pid = fork();
            if (pid == 0 && fexec) {
                /* fexecve(3) while another thread of this child dup2s PATH and OTHER onto
                 * descriptor 3. */
                pthread_t c;
                if (dup2(fd_b, 3) != 3 || pthread_create(&c, NULL, swapper, NULL) != 0)
                    _exit(98);
                fexecve(3, child_argv, environ);
                _exit(113);
            }
            if (pid == 0) {
                execve(a, child_argv, environ);
                _exit(113);
            }
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
            return 97;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code == 42)
            elf++;
        else if (code == 7)
            script++;
        else if (code == 113 || code == 127)
            refused++;
        else
            other++;
    }
    atomic_store(&stop, 1);
    if (!fexec)
        pthread_join(t, NULL);
    dprintf(1, "RACE elf=%d script=%d refused=%d other=%d\n", elf, script, refused, other);
    return 0;
}
