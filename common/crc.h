/*
 * crc.h — CRC32C (Castagnoli, the iSCSI polynomial) over ISA-L's
 * hardware-accelerated kernel. Every shard block IOLake stores carries one.
 *
 * crc32c(0, buf, len) is the standard CRC32C of buf (crc32c("123456789")
 * == 0xE3069283). It chains: crc32c(crc32c(0, a, la), b, lb) equals the
 * CRC of a followed by b.
 */
#ifndef COMMON_CRC_H
#define COMMON_CRC_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif
