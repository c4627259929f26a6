/* sysinfo.h - small /proc readers. */
#ifndef C1M_CLIENT_SYSINFO_H
#define C1M_CLIENT_SYSINFO_H

/* MemAvailable in KiB, or -1 if /proc/meminfo cannot be read. */
long c1m_mem_available_kib(void);
/* Size of net.ipv4.ip_local_port_range, or -1. */
long c1m_local_port_count(void);

#endif
