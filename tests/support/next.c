/* next.so: an interposer loaded after the guard, as tracing and fakeroot-like libraries are.
 * Its getpid asks dlsym(RTLD_NEXT) for the next definition, which must be libc's, not its own:
 * the guard's dlsym must keep the caller that libc's dlsym resolves RTLD_NEXT against. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

pid_t getpid(void) { return 4242; }

__attribute__((constructor)) static void check(void) {
    void *next = dlsym(RTLD_NEXT, "getpid");
    void *any = dlsym(RTLD_DEFAULT, "getpid");
    const char *msg = next && next != (void *)getpid && any == (void *)getpid ? "NEXT_OK\n"
                                                                                : "NEXT_BROKEN\n";
    if (write(2, msg, 7 + (msg[5] == 'B' ? 4 : 0)) < 0)
        _exit(97);
}
