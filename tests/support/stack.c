/* stack: calls one exec entry point on a small stack and reports.
 *
 *   stack KIB ENTRY TARGET [ARG...]
 *
 * ENTRY: execve | execvp | posix_spawn | posix_spawnp | posix_spawnp_actions | system | popen
 * | access | dlopen | fork | vfork | clone. Each runs on a thread with a KIB KiB stack; fork
 * and vfork are called from such a thread (the child execs on it); clone starts a
 * CLONE_VM|CLONE_VFORK child on a KIB KiB stack of its own, as posix_spawn implementations
 * do. access asks access(TARGET, X_OK); dlopen opens TARGET as a library. Prints `PROBE entry=<ENTRY> ret=<r> errno=<e> status=<child status>`
 * (execve prints nothing when the new program runs); a crash shows as the signal status of
 * the process (the test runs this under a parent that reports it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static const char *entry;
static char **child_argv;

static void report(long ret, int err, int status) {
    int code = status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    dprintf(1, "PROBE entry=%s ret=%ld errno=%d status=%d\n", entry, ret, err, code);
}

static int clone_child(void *unused) {
    (void)unused;
    execve(child_argv[0], child_argv, environ);
    _exit(127);
}

static void *run(void *arg) {
    size_t kib = (size_t)arg;
    int status = -1;
    if (!strcmp(entry, "execve")) {
        execve(child_argv[0], child_argv, environ);
        report(-1, errno, -1);
    } else if (!strcmp(entry, "execvp")) {
        execvp(child_argv[0], child_argv);
        report(-1, errno, -1);
    } else if (!strcmp(entry, "posix_spawnp") || !strcmp(entry, "posix_spawnp_actions")) {
        pid_t pid;
        posix_spawn_file_actions_t fa, *actions = NULL;
        if (!strcmp(entry, "posix_spawnp_actions")) {
            posix_spawn_file_actions_init(&fa);
            posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
            posix_spawn_file_actions_addchdir_np(&fa, "/");
            actions = &fa;
        }
        int r = posix_spawnp(&pid, child_argv[0], actions, NULL, child_argv, environ);
        if (r == 0)
            waitpid(pid, &status, 0);
        report(r, r, status);
    } else if (!strcmp(entry, "system")) {
        status = system(child_argv[0]);
        report(status == -1 ? -1 : 0, status == -1 ? errno : 0, status);
    } else if (!strcmp(entry, "popen")) {
        FILE *f = popen(child_argv[0], "r");
        if (f) {
            char buf[64];
            while (fread(buf, 1, sizeof buf, f) > 0) {
            }
            status = pclose(f);
        }
        report(f ? 0 : -1, f ? 0 : errno, status);
    } else if (!strcmp(entry, "access")) {
        int r = access(child_argv[0], X_OK);
        report(r, r ? errno : 0, -1);
    } else if (!strcmp(entry, "dlopen")) {
        void *h = dlopen(child_argv[0], RTLD_NOW);
        report(h ? 0 : -1, 0, -1);
    } else if (!strcmp(entry, "posix_spawn")) {
        pid_t pid;
        int r = posix_spawn(&pid, child_argv[0], NULL, NULL, child_argv, environ);
        if (r == 0)
            waitpid(pid, &status, 0);
        report(r, r, status);
    } else if (!strcmp(entry, "fork") || !strcmp(entry, "vfork")) {
        pid_t pid = entry[0] == 'v' ? vfork() : fork();
        if (pid == 0) {
            execve(child_argv[0], child_argv, environ);
            _exit(127);
        }
        waitpid(pid, &status, 0);
        report(pid < 0 ? -1 : 0, pid < 0 ? errno : 0, status);
    } else if (!strcmp(entry, "clone")) {
        size_t size = kib * 1024;
        char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
            exit(99);
        pid_t pid = clone(clone_child, stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
        if (pid > 0)
            waitpid(pid, &status, 0);
        report(pid < 0 ? -1 : 0, pid < 0 ? errno : 0, status);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        dprintf(2, "usage: stack KIB ENTRY TARGET [ARG...]\n");
        return 99;
    }
    size_t kib = strtoul(argv[1], NULL, 10);
    entry = argv[2];
    child_argv = argv + 3;
    if (!strcmp(entry, "clone")) {
        run((void *)kib);
        return 0;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (pthread_attr_setstacksize(&attr, kib * 1024) != 0) {
        dprintf(2, "stack: cannot set a %zu KiB stack\n", kib);
        return 99;
    }
    pthread_t t;
    if (pthread_create(&t, &attr, run, (void *)kib) != 0)
        return 98;
    pthread_join(t, NULL);
    return 0;
}
