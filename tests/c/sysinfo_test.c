/* sysinfo_test.c - unit tests of the client's memory guard figure
 * (c_server/lib/sysinfo.c): MemAvailable less SReclaimable.
 * Run by tests/client.bats.
 *
 *   sysinfo_test       exit 0 and "sysinfo: ok" when every case passes
 */
#include <stdio.h>
#include <stdlib.h>

#include "sysinfo.h"
#include "check.h"

static void expect(const char *meminfo, long want)
{
    long got = c1m_meminfo_usable_kib(meminfo);
    CHECK(got == want, "usable %ld, want %ld, from \"%s\"", got, want, meminfo);
}

int main(void)
{
    /* The moment the kernel's OOM killer ended an asyncio-streams worker at 1M
     * (results/reference-stall-1m-10pct, dmesg): MemAvailable 2,011 MiB, all of
     * it the open sockets' "reclaimable" slab and less. The same figures as
     * tests/push_stall.bats's mem_usable_kib test. */
    expect("MemTotal:       24684596 kB\n"
           "MemFree:          316444 kB\n"
           "MemAvailable:    2059264 kB\n"
           "Buffers:              12 kB\n"
           "SReclaimable:    2115076 kB\n", 0);
    /* an idle machine: a little reclaimable slab */
    expect("MemAvailable:   22000000 kB\nSReclaimable:      51200 kB\n", 21948800);
    /* the fields in another order, other fields around them */
    expect("SReclaimable:   100 kB\nSUnreclaim:     7 kB\nMemAvailable:   1000 kB\n", 900);
    /* no SReclaimable (an old kernel): MemAvailable alone */
    expect("MemFree: 5 kB\nMemAvailable: 4096 kB\n", 4096);
    /* no MemAvailable, or not a number: unreadable (the guard then gives no verdict) */
    expect("MemFree: 5 kB\nSReclaimable: 1 kB\n", -1);
    expect("MemAvailable: lots\n", -1);
    expect("MemAvailable:", -1);
    expect("", -1);
    /* a field whose name only starts like it does not count */
    expect("MemAvailableX: 9 kB\nMemAvailable: 10 kB\n", 10);
    expect("XMemAvailable: 9 kB\n", -1);
    /* this machine's own /proc/meminfo has both fields */
    long now = c1m_mem_usable_kib();
    CHECK(now >= 0, "c1m_mem_usable_kib() = %ld on this machine", now);
    if (failures)
        return 1;
    puts("sysinfo: ok");
    return 0;
}
