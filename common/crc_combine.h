/*
 * crc_combine.h — the CRC of a concatenation from the CRCs of its pieces
 * and their lengths, without the bytes: crc(A || B) from crc(A), crc(B)
 * and len(B). For the three CRCs S3 offers as full-object multipart
 * checksums: CRC32 (gzip/IEEE), CRC32C (Castagnoli) and CRC64NVME
 * (0xad93d23594c93659), all reflected with init and final xor all ones.
 *
 * Values are the finished CRCs (as S3 sends them, before the big-endian
 * serialisation): crc_combine(k, crc(A), crc(B), len(B)) == crc(A || B);
 * the CRC of nothing is 0 for all three, so combining from 0 with the
 * first piece gives that piece.
 *
 * Cost: O(log len) polynomial products of width bits each (about 64
 * products of 64 steps for a 5 GiB piece), no table walk over the data.
 * Pure, thread-safe (its constant tables are built once, pthread_once).
 * Owns nothing; does not compute a CRC over bytes (common/crc.c,
 * gateway/s3_checksum.c do).
 */
#ifndef COMMON_CRC_COMBINE_H
#define COMMON_CRC_COMBINE_H

#include <stdint.h>

enum crc_kind {
	CRC_KIND_CRC32,       /* reflected 0xedb88320 */
	CRC_KIND_CRC32C,      /* reflected 0x82f63b78 */
	CRC_KIND_CRC64NVME,   /* reflected 0x9a6c9329ac4bc9b5 */
	CRC_KIND__COUNT
};

uint64_t crc_combine(enum crc_kind k, uint64_t crc1, uint64_t crc2, uint64_t len2);

#endif
