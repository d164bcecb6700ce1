/* wx: tries, from where no preload library sees it (built static), each way a written file
 * could become running code, and each system call the session's seccomp filter refuses.
 *
 *   wx exec PATH      raw execve(PATH) (inline system call)
 *   wx loader PATH    execve(ld.so, [ld.so, PATH]): the loader maps PATH itself
 *   wx memfd PATH     memfd_create through syscall() without MFD_NOEXEC_SEAL, PATH copied in,
 *                     then execveat(fd, "", AT_EMPTY_PATH)
 *   wx userns PATH    unshare(CLONE_NEWUSER|CLONE_NEWNS), then execve(PATH)
 *   wx map PATH       mmap(PROT_EXEC) of PATH, as a program that loads code itself (FFI, a
 *                     JIT) would: prints "MAPPED" when the kernel allows it
 *   wx syscalls       each refused call, one "NAME ERRNO" line (0: it succeeded)
 *
 * A failed attempt prints "FAILED <step> <errno>"; a successful exec prints what PATH prints. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#define X32 0x40000000L

static long raw_execve(const char *path, char *const argv[], char *const envp[]) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_execve), "D"(path), "S"(argv), "d"(envp) : "rcx", "r11", "memory");
    return ret;
}

static int failed(const char *step, int err) {
    printf("FAILED %s %d\n", step, err);
    fflush(stdout);
    return 1;
}

static long try(long r) { return r < 0 ? errno : 0; }

int main(int argc, char **argv) {
    char *env[] = {NULL};
    if (argc == 3 && strcmp(argv[1], "exec") == 0) {
        char *args[] = {argv[2], "from-wx", NULL};
        long r = raw_execve(argv[2], args, env);
        return failed("execve", (int)-r);
    }
    if (argc == 3 && strcmp(argv[1], "loader") == 0) {
        char *args[] = {"/lib64/ld-linux-x86-64.so.2", argv[2], "from-loader", NULL};
        long r = raw_execve(args[0], args, env);
        return failed("execve-loader", (int)-r);
    }
    if (argc == 3 && strcmp(argv[1], "memfd") == 0) {
        int fd = (int)syscall(SYS_memfd_create, "wx", 0);
        if (fd < 0) return failed("memfd_create", errno);
        int in = open(argv[2], O_RDONLY);
        if (in < 0) return failed("open", errno);
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof buf)) > 0)
            if (write(fd, buf, (size_t)n) != n) return failed("write", errno);
        char *args[] = {"memfd", "from-memfd", NULL};
        syscall(SYS_execveat, fd, "", args, env, AT_EMPTY_PATH);
        return failed("execveat", errno);
    }
    if (argc == 3 && strcmp(argv[1], "map") == 0) {
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0) return failed("open", errno);
        if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
            return failed("mmap", errno);
        puts("MAPPED");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "mapfd") == 0) {
        /* An inherited descriptor, mapped as it is. */
        if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, atoi(argv[2]), 0) == MAP_FAILED)
            return failed("mmap", errno);
        puts("MAPPED");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "userns") == 0) {
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return failed("unshare", errno);
        char *args[] = {argv[2], "from-userns", NULL};
        long r = raw_execve(argv[2], args, env);
        return failed("execve", (int)-r);
    }
    if (argc == 2 && strcmp(argv[1], "syscalls") == 0) {
        printf("clone3 %ld\n", try(syscall(SYS_clone3, NULL, 0)));
        printf("unshare_user %ld\n", try(syscall(SYS_unshare, CLONE_NEWUSER)));
        printf("unshare_ns %ld\n", try(syscall(SYS_unshare, CLONE_NEWNS)));
        /* The flags in the high half are ignored by the kernel, and by the filter. */
        printf("unshare_user_high %ld\n", try(syscall(SYS_unshare, CLONE_NEWUSER | (1L << 40))));
        long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
        if (c == 0) _exit(0);
        if (c > 0) waitpid((pid_t)c, NULL, 0);
        printf("clone_user %ld\n", c < 0 ? (long)errno : 0L);
        printf("setns %ld\n", try(syscall(SYS_setns, -1, 0)));
        printf("mount %ld\n", try(syscall(SYS_mount, "none", "/nonexistent-wx", "tmpfs", 0, NULL)));
        printf("umount2 %ld\n", try(syscall(SYS_umount2, "/nonexistent-wx", 0)));
        printf("open_tree %ld\n", try(syscall(SYS_open_tree, AT_FDCWD, "/", 0)));
        printf("fsopen %ld\n", try(syscall(SYS_fsopen, "tmpfs", 0)));
        printf("open_by_handle_at %ld\n", try(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0)));
        /* Root gets a descriptor (or EINVAL) without the filter: EPERM is the filter's answer. */
        printf("fanotify_init %ld\n", try(syscall(SYS_fanotify_init, 0 /* FAN_CLASS_NOTIF */, O_RDONLY)));
        printf("bpf %ld\n", try(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0)));
        printf("x32_unshare_user %ld\n", try(syscall(X32 | SYS_unshare, CLONE_NEWUSER)));
        printf("x32_memfd %ld\n", try(syscall(X32 | SYS_memfd_create, "wx", 0)));
        printf("memfd_plain %ld\n", try(syscall(SYS_memfd_create, "wx", 0)));
        printf("memfd_exec %ld\n", try(syscall(SYS_memfd_create, "wx", MFD_EXEC)));
        printf("memfd_noexec_seal %ld\n", try(syscall(SYS_memfd_create, "wx", MFD_NOEXEC_SEAL)));
        return 0;
    }
    fprintf(stderr, "usage: wx exec|loader|memfd|userns PATH | wx syscalls\n");
    return 2;
}
