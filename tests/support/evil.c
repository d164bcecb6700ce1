/* evil.so: a shared object that announces itself when the loader maps it. The tests put it in
 * the workspace and name it in LD_PRELOAD, LD_AUDIT and the loader's --preload: the guard must
 * refuse before the loader ever sees it. */
#include <unistd.h>

__attribute__((constructor)) static void announce(void) {
    static const char msg[] = "EVIL_SO_LOADED\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(97);
}

/* LD_AUDIT modules must export la_version. */
unsigned int la_version(unsigned int v) { return v; }
