/* sealed: what the seal must stop, from places the preload guard cannot see. Built static (no
 * preload library is ever loaded into it) and dynamic.
 *
 *   sealed exec-libc PATH   execve(PATH) through libc (inside a static binary: not interposable)
 *   sealed exec-asm PATH    execve(PATH) with an inline system call instruction
 *   sealed memfd-seals      creates a memfd and prints its seals
 *
 * Prints "EXEC <errno>" when the exec failed (it prints nothing when it succeeded, as the new
 * program replaced it), or "SEALS <hex>". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw_execve(const char *path, char *const argv[], char *const envp[]) {
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_execve), "D"(path), "S"(argv), "d"(envp) : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_execve;
    register long x0 __asm__("x0") = (long)path;
    register long x1 __asm__("x1") = (long)argv;
    register long x2 __asm__("x2") = (long)envp;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
#error "x86_64 or aarch64"
#endif
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "exec-libc") == 0) {
        char *args[] = {argv[2], "from-static", NULL};
        execve(argv[2], args, (char *[]){NULL});
        printf("EXEC %d\n", errno);
        return 1;
    }
    if (argc == 3 && strcmp(argv[1], "exec-asm") == 0) {
        char *args[] = {argv[2], "from-asm", NULL};
        long r = raw_execve(argv[2], args, (char *[]){NULL});
        printf("EXEC %ld\n", -r);
        return 1;
    }
    if (argc == 2 && strcmp(argv[1], "memfd-seals") == 0) {
        int fd = memfd_create("execguard-test", MFD_CLOEXEC);
        if (fd < 0) {
            printf("MEMFD %d\n", errno);
            return 1;
        }
        printf("SEALS %x\n", fcntl(fd, F_GET_SEALS));
        return 0;
    }
    fprintf(stderr, "usage: sealed exec-libc|exec-asm PATH | memfd-seals\n");
    return 2;
}
