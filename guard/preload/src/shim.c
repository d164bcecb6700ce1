/* The variadic entry points, which stable Rust cannot define (exports.rs gives them their libc
 * names). Each collects its arguments on the stack (as glibc does) and calls the guard; none of
 * them calls libc's exec functions. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define HIDDEN __attribute__((visibility("hidden")))

extern char **environ;
/* Hidden: called directly, never bound by the loader (the Rust side defines them). */
HIDDEN int __execguard_execve(const char *path, char *const argv[], char *const envp[], int le);
HIDDEN int __execguard_execvp(const char *file, char *const argv[]);
HIDDEN long __execguard_syscall(long nr, long a, long b, long c, long d, long e, long f);
HIDDEN void __execguard_capture_initial_environment(int argc, char **argv, char **envp);

/* The guard's one initialiser (state.rs), called by the loader with the initial environment.
 * Declared here so that it stays hidden; build.rs puts it, this constructor and the primitives
 * below first in the code, beside the headers the loader reads, so that loading the library
 * faults in one window of its code, not three. */
__attribute__((constructor)) static void execguard_at_load(int argc, char **argv, char **envp) {
    __execguard_capture_initial_environment(argc, argv, envp);
}

/* The memory and string primitives the compilers emit calls to, defined here and hidden, so
 * that loading the library binds no libc symbol for them: every process pays the loader for
 * each symbol it binds, and most processes never exec. The guard's copies are short (paths,
 * the first bytes of a file) but its strings are scanned often (environment entries, of which
 * the policy is one of the longest), so strlen and the comparisons go a word or a vector at a
 * time. Built with -fno-tree-loop-distribute-patterns so no loop below becomes a call to
 * itself. */
typedef uint64_t __attribute__((__may_alias__, __aligned__(1))) loose_u64;

/* A forward copy, also correct for overlapping buffers with dst below src (hence no
 * `restrict`: memmove relies on it). */
static void copy_forward(unsigned char *d, const unsigned char *s, size_t n) {
#if defined(__x86_64__)
    if (n >= 64) {
        __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
        return;
    }
#endif
    for (; n >= 8; n -= 8, d += 8, s += 8)
        *(loose_u64 *)d = *(const loose_u64 *)s;
    while (n--)
        *d++ = *s++;
}

HIDDEN void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    copy_forward(dst, src, n);
    return dst;
}

HIDDEN void *memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d <= s || d >= s + n) {
        copy_forward(d, s, n);
        return dst;
    }
    while (n--)
        d[n] = s[n];
    return dst;
}

HIDDEN void *memset(void *dst, int c, size_t n) {
    unsigned char *d = dst;
#if defined(__x86_64__)
    if (n >= 64) {
        __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
        return dst;
    }
#endif
    uint64_t word = (unsigned char)c * 0x0101010101010101ull;
    for (; n >= 8; n -= 8, d += 8)
        *(loose_u64 *)d = word;
    while (n--)
        *d++ = (unsigned char)c;
    return dst;
}

HIDDEN int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n >= 8 && *(const loose_u64 *)x == *(const loose_u64 *)y; n -= 8, x += 8, y += 8)
        ;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x - *y;
    return 0;
}

HIDDEN int bcmp(const void *a, const void *b, size_t n) { return memcmp(a, b, n); }

#if defined(__SSE2__)
#include <emmintrin.h>
/* Aligned 16-byte loads: a load never crosses a page boundary, so reading the bytes before
 * `s` or after its NUL cannot fault. */
HIDDEN size_t strlen(const char *s) {
    uintptr_t skew = (uintptr_t)s & 15;
    const __m128i *block = (const __m128i *)(s - skew);
    const __m128i zero = _mm_setzero_si128();
    unsigned nuls = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(block), zero));
    nuls >>= skew;
    if (nuls)
        return (size_t)__builtin_ctz(nuls);
    for (;;) {
        block++;
        nuls = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_load_si128(block), zero));
        if (nuls)
            return (size_t)((const char *)block - s) + (size_t)__builtin_ctz(nuls);
    }
}
#else
HIDDEN size_t strlen(const char *s) {
    const char *p = s;
    while (*p)
        p++;
    return (size_t)(p - s);
}
#endif

/* Counts `arg` (the last named parameter) and the arguments after it up to their NULL. */
#define COUNT_ARGS(arg, argc)                                                \
    do {                                                                     \
        va_list ap_;                                                         \
        va_start(ap_, arg);                                                  \
        argc = 0;                                                            \
        if ((arg) != NULL) {                                                 \
            for (argc = 1; va_arg(ap_, const char *) != NULL; argc++) {      \
                if (argc == INT_MAX) {                                       \
                    va_end(ap_);                                             \
                    errno = E2BIG;                                           \
                    return -1;                                               \
                }                                                            \
            }                                                                \
        }                                                                    \
        va_end(ap_);                                                         \
    } while (0)

/* Declares `argv` (on the stack) holding `arg` and the variadic arguments after it up to
 * their NULL, and leaves `ap` open just past that NULL, where execle's environment follows
 * (when arg was NULL, the NULL itself was `arg` and the environment is the next argument). */
#define COLLECT_ARGV(arg, argv, ap)                                          \
    ptrdiff_t argc_;                                                         \
    COUNT_ARGS(arg, argc_);                                                  \
    char *argv[argc_ + 1];                                                   \
    va_list ap;                                                              \
    va_start(ap, arg);                                                       \
    argv[0] = (char *)(arg);                                                 \
    for (ptrdiff_t i_ = 1; i_ <= argc_; i_++)                                \
        argv[i_] = va_arg(ap, char *);                                       \
    argv[argc_] = NULL

HIDDEN int __execguard_execl(const char *path, const char *arg, ...) {
    COLLECT_ARGV(arg, argv, ap);
    va_end(ap);
    return __execguard_execve(path, argv, environ, 0);
}

HIDDEN int __execguard_execle(const char *path, const char *arg, ...) {
    COLLECT_ARGV(arg, argv, ap);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return __execguard_execve(path, argv, envp, 1);
}

HIDDEN int __execguard_execlp(const char *file, const char *arg, ...) {
    COLLECT_ARGV(arg, argv, ap);
    va_end(ap);
    return __execguard_execvp(file, argv);
}

/* Like glibc's syscall(): six argument registers are read whatever the caller passed. */
HIDDEN long __execguard_syscall_entry(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    return __execguard_syscall(nr, a, b, c, d, e, f);
}

/* dlsym and dlvsym: ask the guard where to go (libc's function, or the guard's lookup for the
 * names it replaces), then jump there with the caller's arguments and return address intact:
 * libc's dlsym resolves RTLD_NEXT and RTLD_DEFAULT relative to its caller, so it must see the
 * program's call, not one from the guard. */
HIDDEN unsigned long __execguard_dlsym_route(const char *name, int versioned);
#if defined(__x86_64__)
#define DLSYM_TRAMPOLINE(fn, versioned)                                                         \
    __asm__(".text\n"                                                                          \
            ".globl " #fn "\n"                                                                 \
            ".hidden " #fn "\n"                                                                \
            ".hidden __execguard_dlsym_route\n"                                                \
            ".type " #fn ", @function\n" #fn ":\n"                                             \
            "  push %rdi\n"                                                            \
            "  push %rsi\n"                                                            \
            "  push %rdx\n" /* dlvsym's version; also aligns the stack for the call */         \
            "  mov %rsi, %rdi\n"                                                       \
            "  mov $" #versioned ", %esi\n"                                            \
            "  call __execguard_dlsym_route\n"                                         \
            "  pop %rdx\n"                                                             \
            "  pop %rsi\n"                                                             \
            "  pop %rdi\n"                                                             \
            "  jmp *%rax\n"                                                            \
            ".size " #fn ", .-" #fn "\n")
#elif defined(__aarch64__)
#define DLSYM_TRAMPOLINE(fn, versioned)                                                         \
    __asm__(".text\n"                                                                          \
            ".globl " #fn "\n"                                                                 \
            ".hidden " #fn "\n"                                                                \
            ".hidden __execguard_dlsym_route\n"                                                \
            ".type " #fn ", %function\n" #fn ":\n"                                             \
            "  stp x29, x30, [sp, #-48]!\n"                                            \
            "  mov x29, sp\n"                                                          \
            "  stp x0, x1, [sp, #16]\n"                                                \
            "  str x2, [sp, #32]\n"                                                    \
            "  mov x0, x1\n"                                                           \
            "  mov w1, #" #versioned "\n"                                              \
            "  bl __execguard_dlsym_route\n"                                           \
            "  mov x16, x0\n"                                                          \
            "  ldp x0, x1, [sp, #16]\n"                                                \
            "  ldr x2, [sp, #32]\n"                                                    \
            "  ldp x29, x30, [sp], #48\n"                                              \
            "  br x16\n"                                                               \
            ".size " #fn ", .-" #fn "\n")
#else
#error "execguard's preload library supports x86_64 and aarch64 Linux"
#endif
DLSYM_TRAMPOLINE(__execguard_dlsym, 0);
DLSYM_TRAMPOLINE(__execguard_dlvsym, 1);

/* Debug builds link the precompiled `core`, which is built for panic=unwind and so references
 * the personality routine from its landing pads; without a definition the unoptimised library
 * fails to load ("undefined symbol: rust_eh_personality"). This library is built with
 * panic=abort, so no Rust frame ever unwinds and the routine is never called. Hidden, so it is
 * never exported: a preloaded definition would interpose on the real one of Rust libraries that
 * do unwind. */
__attribute__((visibility("hidden"))) void rust_eh_personality(void) {}
