/* cli.c - see cli.h. */
#include "cli.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void c1m_cli_init(struct c1m_cli *c, const char *prog, const char *usage,
                  const struct c1m_cli_flag *flags, int nflags, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    c->prog = prog;
    c->usage = usage;
    c->flags = flags;
    c->nflags = nflags;
    c->argc = argc;
    c->argv = argv;
    c->i = 1;
}

int c1m_cli_error(const struct c1m_cli *c, const char *flag, const char *value, const char *why)
{
    if (value)
        fprintf(stderr, "%s: %s: invalid value '%s': %s\n", c->prog, flag, value, why);
    else
        fprintf(stderr, "%s: %s: %s\n", c->prog, flag, why);
    fputs(c->usage, stderr);
    return 2;
}

int c1m_cli_next(struct c1m_cli *c)
{
    c->flag = c->value = NULL;
    if (c->i >= c->argc)
        return C1M_CLI_END;
    const char *arg = c->argv[c->i++];
    if (!c->rest_positional && !strcmp(arg, "--")) {
        c->rest_positional = 1;
        return c1m_cli_next(c);
    }
    if (c->rest_positional || arg[0] != '-' || arg[1] == 0) {
        c->flag = c->value = arg;
        return C1M_CLI_POSITIONAL;
    }
    const char *eq = strchr(arg, '=');
    size_t nlen = eq ? (size_t)(eq - arg) : strlen(arg);
    for (int f = 0; f < c->nflags; f++) {
        const char *name = c->flags[f].name;
        if (strlen(name) != nlen || strncmp(name, arg, nlen) != 0)
            continue;
        c->flag = name;
        if (!c->flags[f].has_value) {
            if (eq) {
                c1m_cli_error(c, name, NULL, "takes no value");
                return C1M_CLI_ERROR;
            }
            return f;
        }
        if (eq) {
            c->value = eq + 1;
        } else if (c->i < c->argc) {
            c->value = c->argv[c->i++];
        } else {
            c1m_cli_error(c, name, NULL, "needs a value");
            return C1M_CLI_ERROR;
        }
        return f;
    }
    c1m_cli_error(c, arg, NULL, "unknown flag");
    return C1M_CLI_ERROR;
}

int c1m_parse_long(const char *s, long min, long max, int allow_suffix, long *out)
{
    if (!s || !*s || min < 0 || max < min)
        return -1;
    long v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        int d = *p - '0';
        if (v > (LONG_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (p == s)
        return -1;
    if (*p && allow_suffix && !p[1]) {
        long mul = (*p == 'k' || *p == 'K') ? 1000 : (*p == 'm' || *p == 'M') ? 1000000 : 0;
        if (!mul || v > LONG_MAX / mul)
            return -1;
        v *= mul;
        p++;
    }
    if (*p || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int c1m_parse_ports(const char *s, int *lo, int *count)
{
    if (!s)
        return -1;
    const char *dash = strchr(s, '-');
    char first[8];
    long a, b;
    if (!dash) {
        if (c1m_parse_long(s, 1, 65535, 0, &a) < 0)
            return -1;
        b = a;
    } else {
        size_t n = (size_t)(dash - s);
        if (n == 0 || n >= sizeof(first))
            return -1;
        memcpy(first, s, n);
        first[n] = 0;
        if (c1m_parse_long(first, 1, 65535, 0, &a) < 0 || c1m_parse_long(dash + 1, 1, 65535, 0, &b) < 0)
            return -1;
    }
    if (b < a || b - a + 1 > C1M_PORTS_MAX)
        return -1;
    *lo = (int)a;
    *count = (int)(b - a + 1);
    return 0;
}

int c1m_parse_seconds(const char *s, double min, double max, int allow_inf, double *out)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    int neg = 0;
    if (*p == '-') {
        if (min >= 0)
            return -1;
        neg = 1;
        p++;
    }
    if (!strcmp(p, "inf")) {
        if (!allow_inf)
            return -1;
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    /* digits[.digits] or .digits: strtod would also take spaces, exponents,
     * hex and nan, which no caller means. */
    size_t int_digits = strspn(p, "0123456789");
    const char *q = p + int_digits;
    size_t frac_digits = 0;
    if (*q == '.') {
        frac_digits = strspn(q + 1, "0123456789");
        q += 1 + frac_digits;
    }
    if (*q || int_digits + frac_digits == 0 || int_digits > 15)
        return -1;
    double v = strtod(p, NULL);
    /* "-0" (-0.0, -.0) is neither zero nor negative: a caller reads a
     * negative value as a mode (--hold: until a signal) and -0.0 compares
     * equal to 0 (--hold -0 was read as no hold at all) */
    if (neg && v == 0)
        return -1;
    if (neg)
        v = -v;
    if (!isfinite(v) || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int c1m_parse_host(const char *s)
{
    return s && *s && strlen(s) < C1M_HOST_MAX ? 0 : -1;
}
