/* memo: starts PATH with posix_spawn N times (each must exit 0), then changes PATH as a process
 * outside the session would, and starts it once more:
 *
 *   memo rewrite PATH NEW N    PATH's own inode is rewritten with NEW's bytes (same inode, a
 *                              later change time)
 *   memo rename PATH NEW N     NEW is renamed over PATH (another inode)
 *
 * Prints "MEMO before=<starts that exited 0> after=<exit status, or -errno of posix_spawn>".
 * The guard remembers PATH after two starts in a row; the last start must be decided on what
 * PATH is then. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int start(const char *path) {
    char *argv[] = {(char *)path, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, path, NULL, NULL, argv, environ);
    if (err)
        return -err;
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -errno;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        dprintf(2, "usage: memo rewrite|rename PATH NEW N\n");
        return 99;
    }
    const char *path = argv[2], *new = argv[3];
    int n = atoi(argv[4]), ok = 0;
    for (int i = 0; i < n; i++)
        ok += start(path) == 0;
    if (!strcmp(argv[1], "rename")) {
        if (rename(new, path))
            return 98;
    } else {
        char buf[4096];
        int in = open(new, O_RDONLY), out = open(path, O_WRONLY | O_TRUNC);
        ssize_t len = in < 0 ? -1 : read(in, buf, sizeof buf);
        if (out < 0 || len < 0 || write(out, buf, (size_t)len) != len || close(out))
            return 97;
    }
    printf("MEMO before=%d after=%d\n", ok, start(path));
    return 0;
}
