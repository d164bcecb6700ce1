/* signals: signal handlers that interrupt the guard's decisions.
 *
 *   signals MODE REFUSED ITERATIONS
 *
 * The main loop calls execve(REFUSED) (refused by the guard, so it returns) ITERATIONS times
 * while SIGALRM fires every 2 ms, on an alternate stack (SA_ONSTACK). The handler:
 *   fork     forks; the child makes a decision of its own (posix_spawn /bin/true) and returns
 *            into the interrupted execve, which must still be refused: the child exits 42.
 *   longjmp  siglongjmps back into the loop, out of whatever it interrupted.
 * Prints `PROBE mode=<MODE> signals=<handled> good=<n> bad=<n> maps_grew=<n>`; for fork,
 * good/bad count the children (bad: any status but 42, a crash included).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "maps.h"

extern char **environ;
static volatile sig_atomic_t in_child, handled;
static const char *mode;
static int good, bad;
static sigjmp_buf back;

static void on_alarm(int sig) {
    (void)sig;
    if (in_child)
        return;
    int saved = errno;
    handled++;
    if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            in_child = 1;
            pid_t q;
            char *argv[] = {"/bin/true", NULL};
            if (posix_spawn(&q, "/bin/true", NULL, NULL, argv, environ) == 0)
                waitpid(q, NULL, 0);
            errno = saved;
            return;
        }
        int status = 0;
        if (pid > 0) {
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            if (WIFEXITED(status) && WEXITSTATUS(status) == 42)
                good++;
            else
                bad++;
        }
    } else if (!strcmp(mode, "longjmp")) {
        siglongjmp(back, 1);
    }
    errno = saved;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        dprintf(2, "usage: signals MODE REFUSED ITERATIONS\n");
        return 99;
    }
    mode = argv[1];
    int iterations = atoi(argv[3]);
    stack_t ss = {.ss_sp = malloc(1 << 20), .ss_size = 1 << 20};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_ONSTACK | SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    int maps_before = count_mappings();
    struct itimerval every = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_REAL, &every, NULL);
    char *child_argv[] = {argv[2], NULL};
    for (volatile int i = 0; i < iterations; i++) {
        if (sigsetjmp(back, 1))
            continue;
        execve(argv[2], child_argv, environ);
        if (in_child)
            _exit(42);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("PROBE mode=%s signals=%d good=%d bad=%d maps_grew=%d\n", mode, (int)handled, good,
           bad, count_mappings() - maps_before);
    return 0;
}
