/* execguard-bench chain: `chain N` re-executes itself (argv[0], an absolute
 * path) with N-1 through execve() until N reaches 0. Each hop is a fresh
 * process image that loads the preload and, under a guard, decides once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    long n = strtol(argv[1], NULL, 10);
    if (n <= 0) return 0;
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", n - 1);
    char *args[] = {argv[0], buf, NULL};
    execve(argv[0], args, environ);
    fprintf(stderr, "chain: execve(%s) at hop %ld: %s\n", argv[0], n, strerror(errno));
    return 127;
}
