"""units.py - the one formatter of the figures the docs quote (harness/lib/docs.py).

Bytes are binary and named so: B, KiB, MiB, GiB, TiB (1 KiB = 1024 B); a
column in KiB (runs.csv `*_kib`, sockstat's `tcp_mem`) is multiplied by 1024
first, never divided by 1000. Three significant figures at most.
"""

BINARY = ["B", "KiB", "MiB", "GiB", "TiB"]


def sig3(v):
    """"5.75", "31.6", "289": three significant figures (no more than the
    integer part when that is longer)."""
    a = abs(v)
    if a >= 100 or v == int(v) and a >= 10:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def fmt_bytes(b):
    """"5.75 GiB", "492 KiB", "19 B"."""
    v, i = float(b), 0
    while abs(v) >= 1024 and i < len(BINARY) - 1:
        v, i = v / 1024, i + 1
    return ("%.0f B" % v) if i == 0 else "%s %s" % (sig3(v), BINARY[i])


def fmt_value(v, kind):
    """VALUE as KIND says:
      bytes, kib     a size (B / KiB in the data), binary units
      x              a ratio: "289x", "16.7x", "1.06x"
      pct            a percentage (the data in percent): "81.3%"
      frac           a fraction shown as a percentage: 0.813 -> "81.3%"
      s, ms, us      a duration in that unit, three significant figures: "161 s"
      int            a count with thousands separators: "2,352,600"
      fN             N decimals, no unit: f0, f1, f2, f3
      sN, usN, pctN, xN   the same with N decimals: "s1" -> "161.1 s"
    """
    v = float(v)
    if kind == "bytes":
        return fmt_bytes(v)
    if kind == "kib":
        return fmt_bytes(v * 1024)
    if kind == "int":
        return "{:,}".format(int(round(v)))
    if kind == "frac":
        return "%.1f%%" % (v * 100)
    for unit, suffix in (("pct", "%"), ("us", " \u00b5s"), ("ms", " ms"), ("s", " s"), ("x", "x"), ("f", "")):
        if kind.startswith(unit):
            digits = kind[len(unit):]
            if digits:
                if not digits.isdigit():
                    break
                return "%.*f%s" % (int(digits), v, suffix)
            if unit == "f":
                break
            if unit == "pct":
                return "%.1f%%" % v
            return sig3(v) + suffix
    raise ValueError("unknown format %r" % kind)
