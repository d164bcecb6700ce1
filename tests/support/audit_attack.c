/* What a session can do to its own records (tests/audit_kept.rs):
 *   closeall PATH   close every descriptor (close_range), then execve(PATH): exit 0 when the
 *                   exec was refused (EACCES), 1 when it ran or failed otherwise
 *   storm N PATH    fork N children that each execve(PATH); every other one is killed with
 *                   SIGKILL right after its fork, wherever it is (mid-record, say); wait all
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "closeall")) {
        char *args[] = {argv[2], NULL};
        if (syscall(SYS_close_range, 0U, ~0U, 0) != 0)
            return 2;
        execve(argv[2], args, environ);
        return errno == EACCES ? 0 : 1;
    }
    if (argc == 4 && !strcmp(argv[1], "storm")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid < 0)
                return 2;
            if (pid == 0) {
                char *args[] = {argv[3], NULL};
                execve(argv[3], args, environ);
                _exit(errno == EACCES ? 0 : 1);
            }
            if (i % 2)
                kill(pid, SIGKILL);
        }
        int bad = 0, st;
        while (wait(&st) > 0)
            if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
                bad++;
        return bad ? 1 : 0;
    }
    fprintf(stderr, "usage: audit_attack closeall PATH | storm N PATH\n");
    return 2;
}
