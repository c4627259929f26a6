/* cli.h - the one command-line parser of the C programs (c1m-server,
 * c1m-client, c1m-stat).
 *
 * Every program accepts "--flag value" and "--flag=value", rejects unknown
 * flags and values given to flags that take none, and reports a usage error
 * as "PROG: FLAG: invalid value 'V': WHY" followed by its usage line; the
 * program then exits 2. Numbers are strict: ASCII digits only (no sign, no
 * leading or trailing spaces, no "0x"), range-checked before any overflow.
 */
#ifndef C1M_CLI_H
#define C1M_CLI_H

#include <stddef.h>

/* A host name or address longer than this (with its NUL) cannot be used: the
 * listener keeps a copy in a fixed buffer (listener.h), and no numeric
 * address is that long. Checked at parse time (exit 2), not by every worker. */
#define C1M_HOST_MAX 64

struct c1m_cli_flag {
    const char *name;   /* "--port" (or a short alias such as "-h") */
    int has_value;      /* 1: takes a value; 0: a switch */
};

struct c1m_cli {
    const char *prog;                  /* "c1m-server", printed before errors */
    const char *usage;                 /* usage line(s), printed after errors */
    const struct c1m_cli_flag *flags;
    int nflags;
    int argc;
    char **argv;
    int i;                             /* next argv index */
    int rest_positional;               /* after "--": every argument is positional */
    const char *flag;                  /* last flag's name (from flags[]) or the positional */
    const char *value;                 /* its value; NULL for a switch */
};

enum {
    C1M_CLI_END = -1,        /* no more arguments */
    C1M_CLI_POSITIONAL = -2, /* an argument that is not a flag: in ->value (and ->flag) */
    C1M_CLI_ERROR = -3,      /* usage error, already reported: exit 2 */
};

void c1m_cli_init(struct c1m_cli *c, const char *prog, const char *usage,
                  const struct c1m_cli_flag *flags, int nflags, int argc, char **argv);
/* The index in flags[] of the next flag (with c->value set when it takes
 * one), or one of the C1M_CLI_* values above. "--" ends the flags: every
 * argument after it is positional. */
int c1m_cli_next(struct c1m_cli *c);
/* Report a usage error naming flag (and value when not NULL) on stderr with
 * the usage line. Returns 2, the exit status. */
int c1m_cli_error(const struct c1m_cli *c, const char *flag, const char *value, const char *why);

/* An integer in [min,max] written with ASCII digits only; with allow_suffix a
 * trailing k/K (x1000) or m/M (x1000000). min must be >= 0. 0 on success,
 * -1 otherwise (*out untouched). */
int c1m_parse_long(const char *s, long min, long max, int allow_suffix, long *out);
/* Seconds: [-]digits[.digits] (or .digits) in [min,max]; "inf"/"-inf" when
 * allow_inf. A sign only when min < 0, and never on zero ("-0" is refused:
 * it is neither zero nor negative). No exponent, hex, nan or spaces. */
int c1m_parse_seconds(const char *s, double min, double max, int allow_inf, double *out);
/* A host for --host: non-empty and shorter than C1M_HOST_MAX bytes. 0 or -1. */
int c1m_parse_host(const char *s);
/* A --port value: P or LO-HI, ports 1-65535 (never 0: a kernel-chosen port is
 * reported nowhere), LO <= HI, at most C1M_PORTS_MAX ports. Sets *lo and
 * *count (1 for a single port). 0 or -1 (outputs untouched). */
#define C1M_PORTS_MAX 1024
int c1m_parse_ports(const char *s, int *lo, int *count);

#endif
