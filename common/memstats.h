/*
 * memstats.h — the process's malloc heap in /metrics (glibc mallinfo2).
 *
 * Owns: four callback gauges, iolake_process_malloc_{heap,mmap,inuse,free}_bytes,
 * computed from one mallinfo2() per render (cached 250 ms so the four do
 * not walk the arenas four times), and the one malloc setting a main may
 * make, the arena limit (memstats_limit_arenas). Any thread. Does not
 * count RocksDB's memtables and block cache apart from the rest (the
 * OSDs' and meta's gauges do): they are malloc'd, so inside inuse here.
 */
#ifndef COMMON_MEMSTATS_H
#define COMMON_MEMSTATS_H

struct metrics_registry;

/* Register the gauges (no labels, one set per process). 0 or -errno;
 * EEXIST when reg has them already. */
int memstats_register_metrics(struct metrics_registry *reg);

/* Cap glibc's malloc arenas at n (0: two per online core) with
 * mallopt(M_ARENA_MAX). glibc's own cap is 8 per core; each arena keeps
 * what its threads freed, so a process of many threads on few cores
 * holds freed memory many times over (iolake-aio: ~80 MiB of its peak
 * RSS under make bench's mixed load; 2 and 4 arenas on 2 cores measured
 * alike, docs/performance.md "rssmix").
 * Call before the process starts threads. Returns the cap set, or
 * -EINVAL when mallopt refused it. */
int memstats_limit_arenas(int n);

#endif
