/* `drv 1`: one posix_spawn of /usr/local/libexec/eg-bench/chain 0 (the guard decides in this
 * process, which lives on to be counted); `drv 0`: none. */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
    if (argc > 1 && argv[1][0] == '1') {
        char *args[] = {"/usr/local/libexec/eg-bench/chain", "0", NULL};
        pid_t pid;
        int e = posix_spawn(&pid, args[0], NULL, NULL, args, environ);
        if (e) { fprintf(stderr, "posix_spawn: %s\n", strerror(e)); return 1; }
        int st; waitpid(pid, &st, 0);
        return st != 0;
    }
    return 0;
}
