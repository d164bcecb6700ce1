/* execguard-bench sleeper: says "ready" once the loader is done, then blocks
 * on stdin until EOF so that the harness can read its /proc/PID memory.
 *
 *   sleeper [TARGET]
 *
 * With TARGET (a non-executable file), it first calls execve(TARGET) once,
 * which the kernel refuses with EACCES: a preload that sets itself up lazily
 * on the first exec call has then done so, and its memory shows. */
#include <errno.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    char c;
    if (argc > 1) {
        char *args[] = {argv[1], NULL};
        execve(argv[1], args, environ);
        if (errno != EACCES) return 2;
    }
    if (write(1, "ready\n", 6) != 6) return 1;
    while (read(0, &c, 1) > 0) {
    }
    return 0;
}
