/* sysinfo.h - small /proc readers (the client's memory guard and port range). */
#ifndef C1M_SYSINFO_H
#define C1M_SYSINFO_H

/* What a memory guard may count on, in KiB: MemAvailable less SReclaimable
 * (0 when that is negative), or -1 if /proc/meminfo cannot be read or has no
 * MemAvailable. MemAvailable counts the reclaimable slab as available, and
 * with many sockets open most of it is their inodes and dentries (~2 GiB at
 * 1M loopback connections), which cannot be reclaimed while they are open:
 * the kernel's OOM killer has ended a server while MemAvailable read 2 GiB
 * (results/reference-stall-1m-10pct). The one C home of the rule;
 * py_server/cli_rules.py mem_usable_kib is Python's (tests/py/test_cli_rules.py
 * checks they agree), harness/lib/common.sh mem_usable_kib the shell's. */
long c1m_mem_usable_kib(void);
/* The same from the text of a meminfo file (tests). */
long c1m_meminfo_usable_kib(const char *meminfo);
/* Size of net.ipv4.ip_local_port_range, or -1. */
long c1m_local_port_count(void);

#endif
