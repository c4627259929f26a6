"""profiles_check.py - shared by tests/profiles.bats: did a run hold all N?"""

# Slab figures are machine-wide: another suite running beside this one can
# shrink the kernel's slab during a run, so a run that held every connection
# may come out `suspect` with only these flags. Anything else must be `ok`.
MACHINE_NOISE = {"negative:slab_bytes_per_conn", "negative:kernel_bytes_per_conn"}


def held(r):
    """True when the run held all N: ok, or suspect for machine-wide slab noise only."""
    flags = {f for f in (r.get("flags") or "").split(";") if f}
    return r.get("status") == "ok" or (r.get("status") == "suspect" and flags <= MACHINE_NOISE
                                       and r.get("accepted") == r.get("tier"))
