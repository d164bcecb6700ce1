/* Shared by the C probes: how many mappings this process has (lines of /proc/self/maps), or
 * -1 when it cannot be read. A probe compares it before and after a run to see what the guard
 * left mapped. */
#ifndef EXECGUARD_TEST_MAPS_H
#define EXECGUARD_TEST_MAPS_H
#include <stdio.h>

static int count_mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    int n = 0, c;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}
#endif
