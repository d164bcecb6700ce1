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
 *        other=<anything else> swaps=<swaps done> raced=<starts a swap happened during>
 *        swap_errno=<errno of the first failed swap, or 0>
 *
 * The last three are the attack's positive control: a swap that fails stops the swapper and
 * is reported, and `raced` counts the starts during which at least one swap completed (from
 * the exec call to its return, for posix_spawn; from the call in the child to the child's
 * end, for execve and fexecve).
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
#include <sys/mman.h>
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

/* Shared with the fork children (which swap their own descriptor 3 for fexecve-fd, and
 * record when their exec began). */
struct counters {
    atomic_long swaps;     /* swaps done, by every swapper */
    atomic_int swap_errno; /* the first failed swap's errno */
    atomic_long before;    /* a child's swap count when it called exec */
    atomic_int child_raced;    /* 1 when a child's failed exec saw a swap */
    atomic_int child_returned; /* 1 when a child's exec returned */
};
static struct counters *shared;

static int swap_failed(void) {
    int e = errno ? errno : -1;
    int zero = 0;
    atomic_compare_exchange_strong(&shared->swap_errno, &zero, e);
    return 1;
}

static void *swapper(void *unused) {
    (void)unused;
    while (!atomic_load(&stop)) {
        if (cwd_race) {
            /* posix_spawn-cwd: the cwd is PATH, then OTHER, then PATH... */
            if (chdir(a) || chdir(b))
                return swap_failed(), NULL;
        } else if (fd_a >= 0) {
            /* posix_spawn-fd: descriptor 3 is PATH, then OTHER, then PATH... */
            if (dup2(fd_a, 3) != 3 || dup2(fd_b, 3) != 3)
                return swap_failed(), NULL;
        } else {
            if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0)
                return swap_failed(), NULL;
        }
        atomic_fetch_add(&shared->swaps, 1);
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
    shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return 94;
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
    int elf = 0, script = 0, refused = 0, other = 0, raced = 0;
    const char *spawned = cwd_race ? "./x" : a;
    char *child_argv[] = {(char *)spawned, "--payload", NULL};
    for (int i = 0; i < n; i++) {
        pid_t pid;
        if (spawn) {
            long before = atomic_load(&shared->swaps);
            int rc = posix_spawn(&pid, spawned, NULL, NULL, child_argv, environ);
            raced += atomic_load(&shared->swaps) != before;
            if (rc != 0) {
                refused++;
                continue;
            }
        } else {
            atomic_store(&shared->child_returned, 0);
            atomic_store(&shared->child_raced, 0);
            pid = fork();
            if (pid == 0 && fexec) {
                /* fexecve(3) while another thread of this child dup2s PATH and OTHER onto
                 * descriptor 3. */
                pthread_t c;
                if (dup2(fd_b, 3) != 3 || pthread_create(&c, NULL, swapper, NULL) != 0)
                    _exit(98);
                long before = atomic_load(&shared->swaps);
                atomic_store(&shared->before, before);
                fexecve(3, child_argv, environ);
                atomic_store(&shared->child_raced, atomic_load(&shared->swaps) != before);
                atomic_store(&shared->child_returned, 1);
                _exit(113);
            }
            if (pid == 0) {
                long before = atomic_load(&shared->swaps);
                atomic_store(&shared->before, before);
                execve(a, child_argv, environ);
                atomic_store(&shared->child_raced, atomic_load(&shared->swaps) != before);
                atomic_store(&shared->child_returned, 1);
                _exit(113);
            }
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
            return 97;
        if (!spawn)
            raced += atomic_load(&shared->child_returned)
                         ? atomic_load(&shared->child_raced)
                         : atomic_load(&shared->swaps) != atomic_load(&shared->before);
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
    dprintf(1, "RACE elf=%d script=%d refused=%d other=%d swaps=%ld raced=%d swap_errno=%d\n", elf,
            script, refused, other, atomic_load(&shared->swaps), raced,
            atomic_load(&shared->swap_errno));
    return 0;
}
