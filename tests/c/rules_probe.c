/* rules_probe.c - the C side of the rules C and Python share, for
 * tests/py/test_cli_rules.py (which runs the same inputs through
 * py_server/cli_rules.py and compares):
 *
 *   rules_probe count TEXT LO HI SUFFIX  c1m_parse_long: the value, or "error"
 *   rules_probe usable FILE              c1m_meminfo_usable_kib of FILE's text
 *                                        (-1: no readable MemAvailable)
 *   rules_probe fd-reserve               C1M_FD_RESERVE
 *
 * Exit 0 with one line on stdout; 2 on a bad command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "net.h"
#include "sysinfo.h"

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "count")) {
        long v;
        if (c1m_parse_long(argv[2], atol(argv[3]), atol(argv[4]), atoi(argv[5]), &v) < 0)
            puts("error");
        else
            printf("%ld\n", v);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "usable")) {
        static char buf[65536];
        FILE *f = fopen(argv[2], "r");
        if (!f) {
            perror(argv[2]);
            return 2;
        }
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        printf("%ld\n", c1m_meminfo_usable_kib(buf));
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "fd-reserve")) {
        printf("%d\n", C1M_FD_RESERVE);
        return 0;
    }
    fprintf(stderr, "usage: rules_probe count TEXT LO HI SUFFIX | usable FILE | fd-reserve\n");
    return 2;
}
