/*
 * crc.c — CRC32C over ISA-L's crc32_iscsi.
 *
 * crc32_iscsi() neither inverts its seed nor its result, so the standard
 * CRC32C (and the chaining promised by crc.h) is obtained by inverting both.
 */
#include "common/crc.h"

#include <isa-l.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* ISA-L takes a non-const pointer but does not write through it. */
	return crc32_iscsi((unsigned char *)buf, (int)len, ~crc) ^ 0xFFFFFFFFu;
}
