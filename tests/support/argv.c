/* argv: prints its arguments, one per line, hex-encoded so that blanks, \r and any byte survive:
 *
 *   ARGV <argc>
 *   ARG <hex of argv[0]>
 *   ...
 *
 * The tests use copies of it as the "payload" (native code in a mutable place: if it runs, its
 * ARGV line shows it did), as a protected runtime, and as the #! interpreter whose argv is
 * compared with what the kernel-exact parser predicts. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char line[65536];
    dprintf(1, "ARGV %d\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]), k = 0;
        for (size_t j = 0; j < n && k + 3 < sizeof line; j++)
            k += snprintf(line + k, sizeof line - k, "%02x", (unsigned char)argv[i][j]);
        line[k] = 0;
        dprintf(1, "ARG %s\n", line);
    }
    return 0;
}
