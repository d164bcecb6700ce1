/* around: reaches libc's program-starting and object-mapping functions the ways a program can
 * without calling the hooked names directly: by address from dlsym/dlvsym on libc's own handle,
 * through libc's private aliases, with system call numbers the kernel reads differently from
 * how they are written, and through functions that start a shell from inside libc.
 *
 *   around [--unset-preload] WAY TARGET [ARG...]
 *
 * --unset-preload removes LD_PRELOAD from `environ` first (host mode: a shell started from
 * inside libc would then run unguarded, unless the guard refuses to start it).
 *
 * Exec ways start TARGET with argv = { TARGET, ARG..., NULL } and this environment, and print
 * nothing when it runs (the program speaks); otherwise, and for every way that returns, one
 * line as the probe prints it:
 *
 *   PROBE entry=<WAY> ret=<value> errno=<errno> [status=<exit status>]
 *
 * Ways:
 *   dlsym-execve dlsym-next-execve dlvsym-execve dlsym-execv dlsym-fexecve dlsym-syscall
 *                        libc's execve (or execv, fexecve, syscall) by address
 *   dlsym-posix_spawn dlvsym-posix_spawn-old   posix_spawn by address (the GLIBC_2.2.5 one too)
 *   dlsym-system libc-system io-popen          system, __libc_system, _IO_popen of TARGET
 *   wordexp                                    wordexp("$(TARGET)")
 *   syscall-execve-hi                          syscall(SYS_execve + (1 << 32), ...)
 *   syscall-execveat-hi                        syscall(SYS_execveat + (1 << 32), AT_FDCWD, ...)
 *   dlsym-dlopen dlvsym-dlopen dlmopen         map TARGET as a shared object
 *   iconv-setenv                               setenv("GCONV_PATH", TARGET), then
 *                                              iconv_open("UTF-8", "EVIL"); ret=0 if it opened
 *   spawn-chdir DIR                            posix_spawn TARGET (relative) after a chdir
 *   spawn-fchdir DIR                           action to DIR (an fchdir to DIR's descriptor)
 *   spawn-dup2 OTHER                           posix_spawn /proc/self/fd/N, where N is TARGET
 *                                              open in the parent and OTHER dup2'ed over it
 *                                              in the child
 *   spawn-open OTHER                           the same with an open action of OTHER
 *   spawn-dup2-slashes spawn-dup2-dot OTHER    spawn-dup2 by /proc/self/fd//N, /proc/./self/fd/N
 *   spawn-chdir-cwd DIR                        posix_spawn /proc/self/cwd/TARGET after a chdir
 *                                              action to DIR
 *   spawn-dup2-root spawn-fchdir-root OTHER    spawn-dup2 by /proc/self/fd/R/proc/self/fd/N
 *                                              (R: `/`), or by proc/self/fd/N after an
 *                                              fchdir action to R
 *   memfd-syscall memfd-syscall-hi             memfd_create through syscall(): reports
 *                                              ret=1 when the memfd carries F_SEAL_EXEC
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

extern char **environ;
static const char *way;

static void report(long ret, int err) { dprintf(1, "PROBE entry=%s ret=%ld errno=%d\n", way, ret, err); }

static void report_status(int status) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    dprintf(1, "PROBE entry=%s ret=0 errno=0 status=%d\n", way, code);
}

static void *libc_handle(void) {
    void *h = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    if (!h) {
        dprintf(2, "around: dlopen libc.so.6: %s\n", dlerror());
        exit(99);
    }
    return h;
}

static void *sym(const char *name, const char *version) {
    void *h = libc_handle();
    void *f = version ? dlvsym(h, name, version) : dlsym(h, name);
    if (!f) {
        dprintf(2, "around: no %s in libc: %s\n", name, dlerror());
        exit(99);
    }
    return f;
}

/* GLIBC_2.2.5 is x86-64's base version, GLIBC_2.17 arm64's. */
#if defined(__aarch64__)
#define BASE_VERSION "GLIBC_2.17"
#else
#define BASE_VERSION "GLIBC_2.2.5"
#endif

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef long (*syscall_fn)(long, ...);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);
typedef void *(*dlopen_fn)(const char *, int);

static void spawned(int r, pid_t pid) {
    if (r != 0) {
        report(r, r);
        return;
    }
    int status;
    waitpid(pid, &status, 0);
    report_status(status);
}

static void shell_status(int s, int e) {
    if (s == -1)
        report(-1, e);
    else
        report_status(s);
}

static void mapped(void *h) {
    if (h)
        report(0, 0);
    else
        dprintf(1, "PROBE entry=%s ret=-1 errno=0 dlerror=%s\n", way, dlerror());
}

static void memfd_seals(long nr) {
    long fd = syscall(nr, "around", 0L);
    if (fd < 0) {
        report(-1, errno);
        return;
    }
    int seals = fcntl((int)fd, F_GET_SEALS);
    report(seals >= 0 && (seals & F_SEAL_EXEC) ? 1 : 0, seals < 0 ? errno : 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--unset-preload")) {
        unsetenv("LD_PRELOAD");
        argv++;
        argc--;
    }
    if (argc < 3) {
        dprintf(2, "usage: around [--unset-preload] WAY TARGET [ARG...]\n");
        return 99;
    }
    way = argv[1];
    const char *target = argv[2];
    char **child_argv = argv + 2;
    const long hi = 1L << 32;
    long r;
    errno = 0;
    if (!strcmp(way, "dlsym-execve")) {
        r = ((execve_fn)sym("execve", NULL))(target, child_argv, environ);
    } else if (!strcmp(way, "dlsym-next-execve")) {
        execve_fn f = (execve_fn)dlsym(RTLD_NEXT, "execve");
        r = f(target, child_argv, environ);
    } else if (!strcmp(way, "dlvsym-execve")) {
        r = ((execve_fn)sym("execve", BASE_VERSION))(target, child_argv, environ);
    } else if (!strcmp(way, "dlsym-execv")) {
        r = ((execv_fn)sym("execv", NULL))(target, child_argv);
    } else if (!strcmp(way, "dlsym-fexecve")) {
        int fd = open(target, O_RDONLY | O_CLOEXEC);
        r = fd < 0 ? -1 : ((fexecve_fn)sym("fexecve", NULL))(fd, child_argv, environ);
    } else if (!strcmp(way, "dlsym-syscall")) {
        r = ((syscall_fn)sym("syscall", NULL))(SYS_execve, target, child_argv, environ);
    } else if (!strcmp(way, "syscall-execve-hi")) {
        r = syscall(SYS_execve + hi, target, child_argv, environ);
    } else if (!strcmp(way, "syscall-execveat-hi")) {
        r = syscall(SYS_execveat + hi, (long)AT_FDCWD, target, child_argv, environ, 0L);
    } else if (!strcmp(way, "dlsym-posix_spawn")) {
        pid_t pid;
        spawned(((spawn_fn)sym("posix_spawn", NULL))(&pid, target, NULL, NULL, child_argv, environ),
                pid);
        return 0;
    } else if (!strcmp(way, "dlvsym-posix_spawn-old")) {
        pid_t pid;
        spawn_fn f = (spawn_fn)sym("posix_spawn", BASE_VERSION);
        spawned(f(&pid, target, NULL, NULL, child_argv, environ), pid);
        return 0;
    } else if (!strcmp(way, "dlsym-system") || !strcmp(way, "libc-system")) {
        system_fn f = (system_fn)sym(way[0] == 'l' ? "__libc_system" : "system", NULL);
        int s = f(target);
        shell_status(s, errno);
        return 0;
    } else if (!strcmp(way, "io-popen")) {
        FILE *p = ((popen_fn)sym("_IO_popen", NULL))(target, "r");
        if (!p) {
            report(-1, errno);
            return 0;
        }
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0)
            if (write(1, buf, n) < 0)
                return 98;
        report_status(pclose(p));
        return 0;
    } else if (!strcmp(way, "wordexp")) {
        char words[4096];
        snprintf(words, sizeof words, "$(%s)", target);
        wordexp_t we;
        int w = wordexp(words, &we, WRDE_SHOWERR);
        if (w == 0) {
            for (size_t i = 0; i < we.we_wordc; i++)
                dprintf(1, "WORD %s\n", we.we_wordv[i]);
            wordfree(&we);
        }
        report(w, w == 0 ? 0 : errno);
        return 0;
    } else if (!strcmp(way, "dlsym-dlopen")) {
        mapped(((dlopen_fn)sym("dlopen", NULL))(target, RTLD_NOW));
        return 0;
    } else if (!strcmp(way, "dlvsym-dlopen")) {
        mapped(((dlopen_fn)sym("dlopen", BASE_VERSION))(target, RTLD_NOW));
        return 0;
    } else if (!strcmp(way, "dlmopen")) {
        mapped(dlmopen(LM_ID_NEWLM, target, RTLD_NOW));
        return 0;
    } else if (!strcmp(way, "iconv-setenv")) {
        setenv("GCONV_PATH", target, 1);
        iconv_t cd = iconv_open("UTF-8", "EVIL");
        report(cd == (iconv_t)-1 ? -1 : 0, cd == (iconv_t)-1 ? errno : 0);
        return 0;
    } else if (!strncmp(way, "spawn-", 6)) {
        if (argc < 4) {
            dprintf(2, "around: %s needs a second path\n", way);
            return 99;
        }
        const char *other = argv[3];
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        char fdpath[64];
        const char *spawned_path = target;
        char *spawn_argv[] = {(char *)target, NULL};
        if (!strcmp(way, "spawn-chdir")) {
            posix_spawn_file_actions_addchdir_np(&fa, other);
        } else if (!strcmp(way, "spawn-chdir-cwd")) {
            posix_spawn_file_actions_addchdir_np(&fa, other);
            snprintf(fdpath, sizeof fdpath, "/proc/self/cwd/%s", target);
            spawned_path = fdpath;
            spawn_argv[0] = fdpath;
        } else if (!strcmp(way, "spawn-fchdir")) {
            int d = open(other, O_RDONLY | O_DIRECTORY);
            if (d < 0)
                return 99;
            posix_spawn_file_actions_addfchdir_np(&fa, d);
        } else {
            int t = open(target, O_RDONLY);
            if (t < 0)
                return 99;
            const char *spelling = !strcmp(way, "spawn-dup2-slashes") ? "/proc/self/fd//%d"
                                   : !strcmp(way, "spawn-dup2-dot")   ? "/proc/./self/fd/%d"
                                                                      : "/proc/self/fd/%d";
            snprintf(fdpath, sizeof fdpath, spelling, t);
            if (!strcmp(way, "spawn-dup2-root") || !strcmp(way, "spawn-fchdir-root")) {
                /* Through a descriptor of `/` the child inherits, back into its own /proc. */
                int r = open("/", O_RDONLY | O_DIRECTORY);
                if (r < 0)
                    return 99;
                if (!strcmp(way, "spawn-dup2-root")) {
                    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d/proc/self/fd/%d", r, t);
                } else {
                    posix_spawn_file_actions_addfchdir_np(&fa, r);
                    snprintf(fdpath, sizeof fdpath, "proc/self/fd/%d", t);
                }
            }
            spawned_path = fdpath;
            spawn_argv[0] = fdpath;
            if (!strncmp(way, "spawn-dup2", 10) || !strcmp(way, "spawn-fchdir-root")) {
                int o = open(other, O_RDONLY);
                if (o < 0)
                    return 99;
                posix_spawn_file_actions_adddup2(&fa, o, t);
            } else {
                posix_spawn_file_actions_addclose(&fa, t);
                posix_spawn_file_actions_addopen(&fa, t, other, O_RDONLY, 0);
            }
        }
        pid_t pid;
        spawned(posix_spawn(&pid, spawned_path, &fa, NULL, spawn_argv, environ), pid);
        return 0;
    } else if (!strcmp(way, "memfd-syscall")) {
        memfd_seals(SYS_memfd_create);
        return 0;
    } else if (!strcmp(way, "memfd-syscall-hi")) {
        memfd_seals(SYS_memfd_create + hi);
        return 0;
    } else {
        dprintf(2, "around: unknown way %s\n", way);
        return 99;
    }
    report(r, errno);
    return 0;
}
