/*
 * memstats.h — the process's malloc heap in /metrics (glibc mallinfo2).
 *
 * Owns: four callback gauges, iolake_process_malloc_{heap,mmap,inuse,free}_bytes,
 * computed from one mallinfo2() per render (cached 250 ms so the four do
 * not walk the arenas four times). Any thread. Does not: tune malloc
 * (that is the mallopt of a main), or count RocksDB's memtables
 * and block cache apart from the rest (the OSDs' and meta's gauges do):
 * they are malloc'd, so they are inside inuse here.
 */
#ifndef COMMON_MEMSTATS_H
#define COMMON_MEMSTATS_H

struct metrics_registry;

/* Register the gauges (no labels, one set per process). 0 or -errno;
 * EEXIST when reg has them already. */
int memstats_register_metrics(struct metrics_registry *reg);

#endif
