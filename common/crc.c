/*
 * crc.c — CRC32C (Castagnoli) over ISA-L's crc32_iscsi kernel.
 *
 * crc32_iscsi() is the raw shift register: it neither inverts the seed on
 * entry nor the result on exit. The standard CRC32C does both (init
 * 0xFFFFFFFF, final xor 0xFFFFFFFF), so crc32c() inverts around the call.
 * Because the inversions cancel between calls, the value returned for a
 * prefix is exactly the seed that continues it: crc32c() chains.
 *
 * Stateless and thread-safe. It detects corruption only; it is not a MAC
 * and says nothing about who wrote the bytes.
 */
#include "common/crc.h"

#include <isa-l.h>

/* crc32_iscsi takes an int length; longer buffers go in pieces. */
#define CRC_CHUNK_BYTES ((size_t)1 << 30)

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* ISA-L only reads buf; its prototype lacks the const. */
	unsigned char *p = (unsigned char *)buf;
	uint32_t state = ~crc;

	while (len) {
		size_t n = len < CRC_CHUNK_BYTES ? len : CRC_CHUNK_BYTES;
		state = crc32_iscsi(p, (int)n, state);
		p += n;
		len -= n;
	}
	return ~state;
}
