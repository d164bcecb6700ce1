/* probe: calls exactly one libc entry point that starts a program and reports what happened,
 * in the spirit of bubblewrap's tests/try-syscall.c.
 *
 *   probe [OPTIONS] ENTRY TARGET [ARG...]
 *
 * ENTRY is one of: execve execv execvp execvpe execl execle execlp execveat execveat-empty
 * fexecve posix_spawn posix_spawnp syscall-execve syscall-execveat system popen vfork fork
 * storm.
 *
 * The new program gets argv = { TARGET, ARG..., NULL } (execl* pass up to 6 ARGs) and, for the
 * entry points that take one, envp = this process's environment edited by the options.
 * Entry points that replace the process print nothing on success (the new program speaks);
 * every other outcome is one line on stdout:
 *
 *   PROBE entry=<ENTRY> ret=<return value> errno=<errno> status=<exit status or 128+signal>
 *
 * (`status` only where a child was waited for; `storm` prints ok=/eacces=/other= counts.)
 *
 * Options:
 *   --setenv K=V     replace every K= entry of the passed environment by K=V (append if none)
 *   --addenv K=V     append K=V to the passed environment (duplicates allowed)
 *   --unsetenv K     drop every K= entry from the passed environment
 *   --env-empty      envp = { NULL }
 *   --env-null       envp = NULL
 *   --argv-null      argv = NULL
 *   --argv-empty     argv = { NULL }
 *   --edit-environ   apply --setenv/--unsetenv to `environ` itself (for execv, execvp, system...)
 *   --memfd          copy TARGET into a memfd; the path entry points get /proc/self/fd/N and the
 *                    fd entry points the descriptor
 *   --unlink         open TARGET, then unlink it (a deleted file), likewise
 *   --dirfd DIR      execveat/syscall-execveat: TARGET relative to an O_PATH descriptor of DIR
 *   --nofollow       execveat: AT_SYMLINK_NOFOLLOW
 *   --threads N      storm: threads (default 8)
 *   --iterations M   storm: children per thread (default 50), by fork, vfork, posix_spawn
 *                    and posix_spawnp in turn
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "maps.h"

extern char **environ;

#define MAX_ENV 4096
#define MAX_ARGS 256

static char *env_buf[MAX_ENV + 1];
static int env_len;
static char **child_env;
static char *arg_buf[MAX_ARGS + 1];
static char **child_argv;
static const char *entry;
static const char *target;
static int target_fd = -1; /* --memfd / --unlink */
static char fd_path[64];
static int dirfd_opt = AT_FDCWD;
static int nofollow;
static int threads = 8, iterations = 50;

static void die(const char *what) {
    dprintf(2, "probe: %s: %s\n", what, strerror(errno));
    exit(99);
}

static void report(long ret, int err) {
    dprintf(1, "PROBE entry=%s ret=%ld errno=%d\n", entry, ret, err);
}

static void report_status(long ret, int err, int status) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    dprintf(1, "PROBE entry=%s ret=%ld errno=%d status=%d\n", entry, ret, err, code);
}

static int key_matches(const char *entry_kv, const char *kv) {
    size_t k = strcspn(kv, "=");
    return strncmp(entry_kv, kv, k) == 0 && entry_kv[k] == '=';
}

static void env_remove(const char *key_or_kv) {
    int out = 0;
    for (int i = 0; i < env_len; i++)
        if (!key_matches(env_buf[i], key_or_kv))
            env_buf[out++] = env_buf[i];
    env_len = out;
    env_buf[env_len] = NULL;
}

static void env_append(char *kv) {
    if (env_len == MAX_ENV) {
        errno = E2BIG;
        die("environment");
    }
    env_buf[env_len++] = kv;
    env_buf[env_len] = NULL;
}

/* Copies TARGET into a memfd, or opens and unlinks it; returns a read-only descriptor. */
static int anonymous_copy(int memfd) {
    /* Not close-on-exec: system() and popen() hand /proc/self/fd/N to a shell. */
    int src = open(target, memfd ? O_RDONLY | O_CLOEXEC : O_RDONLY);
    if (src < 0)
        die("open target");
    if (!memfd) {
        if (unlink(target) < 0)
            die("unlink");
        return src;
    }
    int m = memfd_create("probe-payload", 0);
    if (m < 0)
        die("memfd_create");
    char buf[65536];
    ssize_t n;
    while ((n = read(src, buf, sizeof buf)) > 0)
        if (write(m, buf, n) != n)
            die("write memfd");
    if (n < 0)
        die("read target");
    close(src);
    /* A descriptor open for writing makes exec fail with ETXTBSY: reopen read-only. */
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", m);
    int ro = open(p, O_RDONLY);
    if (ro < 0)
        die("reopen memfd");
    close(m);
    return ro;
}

/* The descriptor fd-based entry points run: --memfd/--unlink's, else TARGET opened read-only. */
static int target_descriptor(void) {
    if (target_fd >= 0)
        return target_fd;
    int fd = open(target, O_RDONLY);
    if (fd < 0) {
        report(-1, errno);
        exit(0);
    }
    return fd;
}

/* Number of arguments after argv[0]; execl* pass up to six of them. */
static int argc_n;

/* execl* take the arguments inline and (execle) the environment right after the NULL that ends
 * them, so each argument count needs its own call. */
#define EXECL_N(fn, tail...)                                                                   \
    switch (a0 ? argc_n : -1) {                                                                \
    case -1:                                                                                   \
        return fn(target, (char *)NULL, ##tail);                                               \
    case 0:                                                                                    \
        return fn(target, a0, (char *)NULL, ##tail);                                           \
    case 1:                                                                                    \
        return fn(target, a0, a[0], (char *)NULL, ##tail);                                     \
    case 2:                                                                                    \
        return fn(target, a0, a[0], a[1], (char *)NULL, ##tail);                               \
    case 3:                                                                                    \
        return fn(target, a0, a[0], a[1], a[2], (char *)NULL, ##tail);                         \
    case 4:                                                                                    \
        return fn(target, a0, a[0], a[1], a[2], a[3], (char *)NULL, ##tail);                   \
    case 5:                                                                                    \
        return fn(target, a0, a[0], a[1], a[2], a[3], a[4], (char *)NULL, ##tail);             \
    case 6:                                                                                    \
        return fn(target, a0, a[0], a[1], a[2], a[3], a[4], a[5], (char *)NULL, ##tail);       \
    default:                                                                                   \
        errno = E2BIG;                                                                         \
        return -1;                                                                             \
    }

/* --argv-null/--argv-empty deliberately call execl(path, NULL). */
#pragma GCC diagnostic ignored "-Wnonnull"
#pragma GCC diagnostic ignored "-Wformat"
static int call_execl(int which) {
    char *a0 = child_argv ? child_argv[0] : NULL;
    char **a = child_argv && a0 ? child_argv + 1 : NULL;
    switch (which) {
    case 0:
        EXECL_N(execl);
    case 1:
        EXECL_N(execle, child_env);
    default:
        EXECL_N(execlp);
    }
}

static int open_dirfd(const char *dir) {
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        die("open --dirfd");
    return fd;
}

/* fork + execve in a child; the child's errno travels back through a pipe. */
static void run_fork(void) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        execve(target, child_argv, child_env);
        int e = errno;
        if (write(p[1], &e, sizeof e) != sizeof e)
            _exit(98);
        _exit(127);
    }
    close(p[1]);
    int e = 0;
    ssize_t n = read(p[0], &e, sizeof e);
    int status;
    waitpid(pid, &status, 0);
    report_status(n == sizeof e ? -1 : 0, n == sizeof e ? e : 0, status);
}

static volatile int vfork_errno;

static void run_vfork(void) {
    vfork_errno = 0;
    pid_t pid = vfork();
    if (pid < 0)
        die("vfork");
    if (pid == 0) {
        execve(target, child_argv, child_env);
        vfork_errno = errno; /* shared memory until the child exits */
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    report_status(vfork_errno ? -1 : 0, vfork_errno, status);
}

static int storm_ok, storm_eacces, storm_other;
static pthread_mutex_t storm_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork or vfork, the child execs the target (in a frame of its own: the vfork child never
 * returns from it). */
static pid_t fork_exec(int by_vfork) {
    pid_t pid = by_vfork ? vfork() : fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        execve(target, child_argv, child_env);
        _exit(errno == EACCES ? 113 : 114);
    }
    return pid;
}

/* Each thread goes round fork, vfork, posix_spawn and posix_spawnp, so that decisions of
 * every kind overlap: in parents, in fork children and in vfork children sharing memory. */
static void *storm_thread(void *unused) {
    (void)unused;
    for (int i = 0; i < iterations; i++) {
        pid_t pid;
        int way = i % 4;
        if (way >= 2) {
            int r = way == 2 ? posix_spawn(&pid, target, NULL, NULL, child_argv, child_env)
                             : posix_spawnp(&pid, target, NULL, NULL, child_argv, child_env);
            if (r != 0) {
                pthread_mutex_lock(&storm_lock);
                if (r == EACCES)
                    storm_eacces++;
                else
                    storm_other++;
                pthread_mutex_unlock(&storm_lock);
                continue;
            }
        } else {
            pid = fork_exec(way == 1);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
            die("waitpid");
        pthread_mutex_lock(&storm_lock);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            storm_ok++;
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 113)
            storm_eacces++;
        else
            storm_other++;
        pthread_mutex_unlock(&storm_lock);
    }
    return NULL;
}

static void run_storm(void) {
    pthread_t t[64];
    int maps_before = count_mappings();
    if (threads < 1 || threads > 64)
        threads = 8;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, storm_thread, NULL) != 0)
            die("pthread_create");
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    /* Mappings left behind (glibc keeps the joined threads' stacks: about one per thread). */
    dprintf(1, "PROBE entry=storm ok=%d eacces=%d other=%d maps_grew=%d\n", storm_ok,
            storm_eacces, storm_other, count_mappings() - maps_before);
}

static void run_spawn(int search) {
    pid_t pid;
    int r = search ? posix_spawnp(&pid, target, NULL, NULL, child_argv, child_env)
                   : posix_spawn(&pid, target, NULL, NULL, child_argv, child_env);
    if (r != 0) {
        dprintf(1, "PROBE entry=%s ret=%d errno=%d\n", entry, r, r);
        return;
    }
    int status;
    waitpid(pid, &status, 0);
    report_status(0, 0, status);
}

static void run_popen(void) {
    FILE *f = popen(target, "r");
    if (!f) {
        report(-1, errno);
        return;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (write(1, buf, n) < 0)
            die("write");
    int status = pclose(f);
    report_status(0, 0, status);
}

int main(int argc, char **argv) {
    int i = 1, memfd = 0, unlinked = 0, env_empty = 0, env_null = 0, argv_null = 0,
        argv_empty = 0, edit_environ = 0;
    for (char **e = environ; *e; e++)
        env_append(*e);
    const char *unsets[64];
    int n_unsets = 0;
    const char *sets[64];
    int n_sets = 0;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--setenv") && i + 1 < argc) {
            env_remove(argv[++i]);
            env_append(argv[i]);
            if (n_sets < 64)
                sets[n_sets++] = argv[i];
        } else if (!strcmp(o, "--addenv") && i + 1 < argc) {
            env_append(argv[++i]);
        } else if (!strcmp(o, "--unsetenv") && i + 1 < argc) {
            env_remove(argv[++i]);
            if (n_unsets < 64)
                unsets[n_unsets++] = argv[i];
        } else if (!strcmp(o, "--env-empty")) {
            env_empty = 1;
        } else if (!strcmp(o, "--env-null")) {
            env_null = 1;
        } else if (!strcmp(o, "--argv-null")) {
            argv_null = 1;
        } else if (!strcmp(o, "--argv-empty")) {
            argv_empty = 1;
        } else if (!strcmp(o, "--edit-environ")) {
            edit_environ = 1;
        } else if (!strcmp(o, "--memfd")) {
            memfd = 1;
        } else if (!strcmp(o, "--unlink")) {
            unlinked = 1;
        } else if (!strcmp(o, "--dirfd") && i + 1 < argc) {
            dirfd_opt = open_dirfd(argv[++i]);
        } else if (!strcmp(o, "--nofollow")) {
            nofollow = 1;
        } else if (!strcmp(o, "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(o, "--iterations") && i + 1 < argc) {
            iterations = atoi(argv[++i]);
        } else {
            dprintf(2, "probe: unknown option %s\n", o);
            return 99;
        }
    }
    if (argc - i < 2) {
        dprintf(2, "usage: probe [OPTIONS] ENTRY TARGET [ARG...]\n");
        return 99;
    }
    entry = argv[i];
    target = argv[i + 1];
    if (memfd || unlinked) {
        target_fd = anonymous_copy(memfd);
        snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", target_fd);
    }
    /* argv: TARGET (or the fd path) then the remaining arguments. */
    argc_n = 0;
    arg_buf[argc_n++] = (char *)(target_fd >= 0 ? fd_path : target);
    for (int k = i + 2; k < argc && argc_n < MAX_ARGS; k++)
        arg_buf[argc_n++] = argv[k];
    arg_buf[argc_n] = NULL;
    argc_n--; /* number of arguments after argv[0] */
    child_argv = argv_null ? NULL : argv_empty ? &arg_buf[argc_n + 1] : arg_buf;
    static char *no_env[1] = {NULL};
    child_env = env_null ? NULL : env_empty ? no_env : env_buf;
    if (edit_environ) {
        for (int k = 0; k < n_unsets; k++)
            unsetenv(unsets[k]);
        for (int k = 0; k < n_sets; k++)
            putenv((char *)sets[k]);
    }
    if (target_fd >= 0)
        target = fd_path;

    long r;
    if (!strcmp(entry, "execve")) {
        r = execve(target, child_argv, child_env);
    } else if (!strcmp(entry, "execv")) {
        r = execv(target, child_argv);
    } else if (!strcmp(entry, "execvp")) {
        r = execvp(target, child_argv);
    } else if (!strcmp(entry, "execvpe")) {
        r = execvpe(target, child_argv, child_env);
    } else if (!strcmp(entry, "execl")) {
        r = call_execl(0);
    } else if (!strcmp(entry, "execle")) {
        r = call_execl(1);
    } else if (!strcmp(entry, "execlp")) {
        r = call_execl(2);
    } else if (!strcmp(entry, "execveat")) {
        r = execveat(dirfd_opt, target, child_argv, child_env,
                     nofollow ? AT_SYMLINK_NOFOLLOW : 0);
    } else if (!strcmp(entry, "execveat-empty")) {
        r = execveat(target_descriptor(), "", child_argv, child_env, AT_EMPTY_PATH);
    } else if (!strcmp(entry, "fexecve")) {
        r = fexecve(target_descriptor(), child_argv, child_env);
    } else if (!strcmp(entry, "syscall-execve")) {
        r = syscall(SYS_execve, target, child_argv, child_env);
    } else if (!strcmp(entry, "syscall-execveat")) {
        if (dirfd_opt != AT_FDCWD || target_fd < 0)
            r = syscall(SYS_execveat, dirfd_opt, target, child_argv, child_env,
                        nofollow ? AT_SYMLINK_NOFOLLOW : 0);
        else
            r = syscall(SYS_execveat, target_descriptor(), "", child_argv, child_env,
                        AT_EMPTY_PATH);
    } else if (!strcmp(entry, "posix_spawn")) {
        run_spawn(0);
        return 0;
    } else if (!strcmp(entry, "posix_spawnp")) {
        run_spawn(1);
        return 0;
    } else if (!strcmp(entry, "system")) {
        errno = 0;
        int s = system(target);
        int e = errno;
        if (s == -1)
            report(-1, e);
        else
            report_status(0, 0, s);
        return 0;
    } else if (!strcmp(entry, "popen")) {
        run_popen();
        return 0;
    } else if (!strcmp(entry, "fork")) {
        run_fork();
        return 0;
    } else if (!strcmp(entry, "vfork")) {
        run_vfork();
        return 0;
    } else if (!strcmp(entry, "storm")) {
        run_storm();
        return 0;
    } else {
        dprintf(2, "probe: unknown entry point %s\n", entry);
        return 99;
    }
    report(r, errno);
    return 0;
}
