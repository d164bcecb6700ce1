/* execguard-bench sleeper: says "ready" once the loader is done, then blocks
 * on stdin until EOF so that the harness can read its /proc/PID memory. */
#include <unistd.h>

int main(void) {
    char c;
    if (write(1, "ready\n", 6) != 6) return 1;
    while (read(0, &c, 1) > 0) {
    }
    return 0;
}
