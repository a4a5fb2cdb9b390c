/*
 * raftcrc.c — the process's byteCrc32, libraft's entry and segment
 * checksum (see raftcrc.h), computed with ISA-L's crc32_ieee (PCLMUL
 * folding) instead of libraft's table loop.
 *
 * Why the values are equal: both are the CRC with polynomial 0x04C11DB7,
 * MSB first (crc32_ieee is the unreflected CRC-32/BZIP2). crc32_ieee
 * inverts the running value on entry and on exit; byteCrc32 does neither.
 * A CRC register is linear in the bytes, so inverting twice cancels:
 *     byteCrc32(buf, n, init) == ~crc32_ieee(~init, buf, n)
 * for every buffer, length (0 too) and init, chained calls included.
 * Checked against a reference table CRC in test_raftcrc.c, which also
 * loads a log written by the stock libraft and the other way round.
 *
 * Owns: the byteCrc32 symbol and a call counter. Does not: change what
 * libraft checksums or when, or the on-disk format.
 */
#include "meta/raftcrc.h"

#include <isa-l/crc.h>
#include <stdatomic.h>

static atomic_uint_fast64_t calls;

uint32_t byteCrc32(const void *buf, size_t size, uint32_t init)
{
	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	return ~crc32_ieee(~init, buf, size);
}

uint64_t raftcrc_calls(void)
{
	return atomic_load_explicit(&calls, memory_order_relaxed);
}
