/* The C floor: an empty shared library that exports nothing.
 *
 * Built by the harness with the compiler's defaults:
 *   cc -shared -fPIC -O2 -o libfloor_c.so empty.c
 * Preloading it costs what any preload costs (one more object for ld.so to
 * find, map, relocate and initialise) and nothing else. */
typedef int execguard_floor_empty_translation_unit;
