/* execguard-bench driver: times K calls of one exec entry point.
 *
 *   driver MODE K [TARGET]
 *
 * Every exec mode forks (or vforks) a child that calls the entry point on
 * /bin/true, then waits for it; one op is fork + exec + the child's whole
 * life + waitpid. posix_spawn[p] need no fork. warm_eacces calls execve() in
 * this (warm) process on TARGET, a non-executable system ELF, which the kernel
 * refuses with EACCES: a preload's decision cost without any process creation.
 * vfork_eacces does the same in a fresh vfork child (what a shell's child pays
 * to decide, without starting an image). child_preload posix_spawns /bin/true
 * with LD_PRELOAD set to $BENCH_CHILD_PRELOAD in the child only: this process
 * loads nothing, so an op is what loading the library costs a new process.
 *
 * Prints one line per op: wall-clock nanoseconds, then CPU nanoseconds (user +
 * system of this process and of the children it reaped during the op, which
 * the kernel accounts precisely). Exits 1 on the first failed op, with
 * the reason on stderr, so a refused or broken exec never looks fast. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long tv_ns(struct timeval tv) {
    return (long long)tv.tv_sec * 1000000000LL + (long long)tv.tv_usec * 1000LL;
}

/* CPU time of this process plus its reaped children, in ns. */
static long long cpu_ns(void) {
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return tv_ns(self.ru_utime) + tv_ns(self.ru_stime) + tv_ns(kids.ru_utime) +
           tv_ns(kids.ru_stime);
}

static const char *TRUE_PATH = "/bin/true";
static int true_fd = -1;

static void child_exec(const char *mode) {
    char *argv[] = {"true", NULL};
    if (!strcmp(mode, "execve")) execve(TRUE_PATH, argv, environ);
    else if (!strcmp(mode, "execv")) execv(TRUE_PATH, argv);
    else if (!strcmp(mode, "execvp")) execvp("true", argv);
    else if (!strcmp(mode, "execvpe")) execvpe("true", argv, environ);
    else if (!strcmp(mode, "execl")) execl(TRUE_PATH, "true", (char *)NULL);
    else if (!strcmp(mode, "execle")) execle(TRUE_PATH, "true", (char *)NULL, environ);
    else if (!strcmp(mode, "execlp")) execlp("true", "true", (char *)NULL);
    else if (!strcmp(mode, "fexecve")) fexecve(true_fd, argv, environ);
    else if (!strcmp(mode, "execveat")) execveat(AT_FDCWD, TRUE_PATH, argv, environ, 0);
    else { errno = EINVAL; }
    /* Only reached when the call failed. */
    int e = errno;
    fprintf(stderr, "driver: %s of %s failed: %s\n", mode, TRUE_PATH, strerror(e));
    _exit(127);
}

/* child_preload: this environment plus LD_PRELOAD=$BENCH_CHILD_PRELOAD (when set). */
static char **child_env;

static char **with_child_preload(void) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "BENCH_CHILD_PRELOAD=", 20)) env[k++] = environ[i];
    const char *lib = getenv("BENCH_CHILD_PRELOAD");
    if (lib && *lib) {
        size_t len = strlen(lib) + sizeof "LD_PRELOAD=";
        char *v = malloc(len);
        if (!v) return NULL;
        snprintf(v, len, "LD_PRELOAD=%s", lib);
        env[k++] = v;
    }
    return env;
}

static int reap(pid_t pid, const char *mode) {
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "driver: %s: waitpid: %s\n", mode, strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "driver: %s: child did not exit 0 (status 0x%x)\n", mode, status);
        return -1;
    }
    return 0;
}

static int one_op(const char *mode, const char *target) {
    if (!strcmp(mode, "posix_spawn") || !strcmp(mode, "posix_spawnp")) {
        char *argv[] = {"true", NULL};
        pid_t pid;
        int rc = !strcmp(mode, "posix_spawn")
                     ? posix_spawn(&pid, TRUE_PATH, NULL, NULL, argv, environ)
                     : posix_spawnp(&pid, "true", NULL, NULL, argv, environ);
        if (rc != 0) {
            fprintf(stderr, "driver: %s of %s failed: %s\n", mode, TRUE_PATH, strerror(rc));
            return -1;
        }
        return reap(pid, mode);
    }
    if (!strcmp(mode, "warm_eacces")) {
        char *argv[] = {(char *)target, NULL};
        execve(target, argv, environ);
        if (errno != EACCES) {
            fprintf(stderr, "driver: warm_eacces: execve(%s) gave %s, expected EACCES\n", target,
                    strerror(errno));
            return -1;
        }
        return 0;
    }
    if (!strcmp(mode, "vfork_eacces")) {
        char *argv[] = {(char *)target, NULL};
        pid_t pid = vfork();
        if (pid == 0) {
            execve(target, argv, environ);
            _exit(errno == EACCES ? 0 : 126);
        }
        if (pid < 0) {
            fprintf(stderr, "driver: vfork: %s\n", strerror(errno));
            return -1;
        }
        return reap(pid, mode);
    }
    if (!strcmp(mode, "child_preload")) {
        char *argv[] = {"true", NULL};
        pid_t pid;
        int rc = posix_spawn(&pid, TRUE_PATH, NULL, NULL, argv, child_env);
        if (rc != 0) {
            fprintf(stderr, "driver: %s of %s failed: %s\n", mode, TRUE_PATH, strerror(rc));
            return -1;
        }
        return reap(pid, mode);
    }
    if (!strcmp(mode, "vfork_execve")) {
        char *argv[] = {"true", NULL};
        pid_t pid = vfork();
        if (pid == 0) {
            execve(TRUE_PATH, argv, environ);
            _exit(127);
        }
        if (pid < 0) {
            fprintf(stderr, "driver: vfork: %s\n", strerror(errno));
            return -1;
        }
        return reap(pid, mode);
    }
    pid_t pid = fork();
    if (pid == 0) child_exec(mode);
    if (pid < 0) {
        fprintf(stderr, "driver: fork: %s\n", strerror(errno));
        return -1;
    }
    return reap(pid, mode);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: driver MODE K [TARGET]\n");
        return 2;
    }
    const char *mode = argv[1];
    long k = strtol(argv[2], NULL, 10);
    const char *target = argc > 3 ? argv[3] : "";
    if ((!strcmp(mode, "warm_eacces") || !strcmp(mode, "vfork_eacces")) && access(target, X_OK) == 0) {
        fprintf(stderr, "driver: %s is executable; %s needs a non-executable file\n", target, mode);
        return 2;
    }
    if (!strcmp(mode, "child_preload") && !(child_env = with_child_preload())) {
        fprintf(stderr, "driver: out of memory\n");
        return 1;
    }
    if (!strcmp(mode, "fexecve")) {
        true_fd = open(TRUE_PATH, O_RDONLY | O_CLOEXEC);
        if (true_fd < 0) {
            fprintf(stderr, "driver: open %s: %s\n", TRUE_PATH, strerror(errno));
            return 1;
        }
    }
    long long *ns = calloc((size_t)(k > 0 ? k : 1), sizeof *ns);
    long long *cpu = calloc((size_t)(k > 0 ? k : 1), sizeof *cpu);
    if (!ns || !cpu) return 1;
    for (long i = 0; i < k; i++) {
        long long c0 = cpu_ns();
        long long t0 = now_ns();
        if (one_op(mode, target) != 0) return 1;
        ns[i] = now_ns() - t0;
        cpu[i] = cpu_ns() - c0;
    }
    for (long i = 0; i < k; i++) printf("%lld %lld\n", ns[i], cpu[i]);
    return 0;
}
