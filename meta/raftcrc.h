/*
 * raftcrc.h — libraft's entry and segment checksum, byteCrc32, at
 * hardware speed.
 *
 * canonical/raft's raft_uv checksums every batch it appends (header and
 * data: ~4.3 KiB per small PUT) and every batch of every segment it loads
 * with byteCrc32, a byte-at-a-time table CRC (libiberty's crc32:
 * polynomial 0x04C11DB7, MSB first, no inversion). That was ~10-13 us of
 * meta's ~40 us per PUT 4 KiB (docs/performance.md, "metaput").
 *
 * The binaries link a private copy of Debian's libraft.a whose byteCrc32
 * is weak (the Makefile: objcopy --weaken-symbol), and meta/raftcrc.c
 * defines the strong one, so libraft's calls land in it. The values are
 * the same bit for bit: the on-disk format does not change, data dirs
 * written by the stock library load and the other way round
 * (tests/unit/meta/test_raftcrc.c).
 */
#ifndef META_RAFTCRC_H
#define META_RAFTCRC_H

#include <stddef.h>
#include <stdint.h>

/* libraft's signature (src/byte.h): the CRC of size bytes at buf, going
 * on from init (0 for a fresh one, or the value of the bytes before). */
uint32_t byteCrc32(const void *buf, size_t size, uint32_t init);

/* How many times byteCrc32 ran in this process (for tests: proof that
 * libraft's calls are this module's). */
uint64_t raftcrc_calls(void);

#endif
