"""bootstrap.py - medians with percentile-bootstrap 95% intervals, and the
ratio of two medians with its interval (the statistics behind the summary,
the plots' error bars and `make compare`).

Percentile bootstrap: resample the runs with replacement RESAMPLES times, take
the median of each resample, and report the 2.5th and 97.5th percentiles of
those medians. The generator is seeded with SEED, so the same runs always give
the same interval (reports and plots are reproducible). With 3 runs the
interval of a median is the runs' min-max: 3 runs cannot say more.
"""
import random
import statistics

SEED = 20260701
RESAMPLES = 2000
MIN_RUNS = 3          # fewer runs than this: min-max, no interval, no verdict
LEVEL = 0.95


def _percentiles(sorted_vals, level=LEVEL):
    """The (1-level)/2 and (1+level)/2 percentiles of sorted values (nearest rank)."""
    n = len(sorted_vals)
    a = (1 - level) / 2
    lo = sorted_vals[min(n - 1, int(a * n))]
    hi = sorted_vals[max(0, min(n - 1, int((1 - a) * n + 0.5) - 1))]
    return lo, hi


def median_ci(vals, resamples=RESAMPLES, seed=SEED):
    """(median, lo, hi): the percentile-bootstrap 95% interval of the median."""
    vals = list(vals)
    if not vals:
        raise ValueError("no values")
    med = statistics.median(vals)
    if min(vals) == max(vals):
        return med, med, med
    rng = random.Random(seed)
    n = len(vals)
    meds = sorted(statistics.median(rng.choices(vals, k=n)) for _ in range(resamples))
    lo, hi = _percentiles(meds)
    # Reported intervals always hold the median they go with (the percentile
    # rounding of a lumpy bootstrap distribution could otherwise miss it).
    return med, min(lo, med), max(hi, med)


def spread(vals):
    """(median, lo, hi, kind): a 95% bootstrap interval with MIN_RUNS or more
    values ("ci"), the min-max below that ("minmax"); None without values."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    if len(vals) >= MIN_RUNS:
        return median_ci(vals) + ("ci",)
    return statistics.median(vals), min(vals), max(vals), "minmax"


def ratio_ci(a, b, resamples=RESAMPLES, seed=SEED):
    """(ratio, lo, hi): median(b) / median(a) and the percentile-bootstrap 95%
    interval of that ratio, each side resampled on its own. Every value must
    be positive (a ratio of sizes or durations)."""
    a, b = list(a), list(b)
    if not a or not b:
        raise ValueError("no values")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("values must be positive")
    ratio = statistics.median(b) / statistics.median(a)
    rng = random.Random(seed)
    rs = sorted(statistics.median(rng.choices(b, k=len(b))) /
                statistics.median(rng.choices(a, k=len(a))) for _ in range(resamples))
    lo, hi = _percentiles(rs)
    return ratio, min(lo, ratio), max(hi, ratio)


def verdict(a, b, up="slower", down="faster"):
    """pyperf compare_to style: (ratio, lo, hi, text). Significant when the
    ratio's 95% interval excludes 1.0 AND the medians differ by more than the
    runs' own spread (the larger sample standard deviation of the two sides);
    ratio etc. are None when there are too few runs or a value is not positive."""
    a = [v for v in a if v is not None]
    b = [v for v in b if v is not None]
    if len(a) < MIN_RUNS or len(b) < MIN_RUNS:
        return None, None, None, "not enough runs"
    try:
        ratio, lo, hi = ratio_ci(a, b)
    except ValueError:
        return None, None, None, "no ratio (values <= 0)"
    diff = statistics.median(b) - statistics.median(a)
    own = max(statistics.stdev(a), statistics.stdev(b))
    if (lo > 1.0 or hi < 1.0) and abs(diff) > own:
        return ratio, lo, hi, "%s (significant)" % (up if ratio > 1 else down)
    return ratio, lo, hi, "not significant"
