/*
 * rec.h — the shard index's key and record codecs (pure: bytes in, bytes
 * or errors out; no I/O), so they can be tested and fuzzed alone.
 *
 * Namespaces of the index's RocksDB (first key byte):
 *   'S'      shard records (below)
 *   'B'      bad-shard records of the scrubber (scrub.h): the shard key
 *            with 'B' in place of 'S'; dropped in the batch of any put or
 *            delete of that shard (store.c)
 *   0x01     singletons: "\x01ident" (store.c), "\x01clog" (kv.c),
 *            "\x01scrub" (the scrubber's cursor, scrub.c)
 *
 * Key (STORE_KEY_LEN = 71 bytes, ordered so RocksDB's bytewise order is
 * (pg, object id, shard index) with object ids in bytewise order):
 *   [0]      'S'                 namespace of shard records
 *   [1..4]   pg id, u32 BIG-endian (so keys sort by pg numerically)
 *   [5..68]  object id, zero-padded to 64 bytes
 *   [69]     object id length (1..64): breaks ties between "a" and "a\0"
 *   [70]     shard index
 *
 * Record, version 1, all integers LITTLE-endian:
 *   [0]      u8  version (1)
 *   [1]      u8  flags: bit 0 = inline (data follows the header)
 *   [2..3]   u16 crc block shift: per-block crcs cover 1 << shift bytes
 *                (16 = 64 KiB); the last block may be short
 *   [4..7]   u32 crc32c of the whole shard
 *   [8..15]  u64 shard length in bytes
 *   inline:  [16..16+length) the shard bytes (their crc is the whole crc)
 *   extent:  [16..23] u64 first block (4 KiB units from the data area start)
 *            [24..27] u32 number of blocks (= ceil(length / 4096))
 *            [28..31] u32 number of crcs n (= ceil(length / crc block))
 *            [32..32+4n) u32 crc32c of each crc block
 * A decoder rejects (IOL_ECORRUPT) any length or count that disagrees.
 */
#ifndef OSD_STORE_REC_H
#define OSD_STORE_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define STORE_OID_MAX 64
#define STORE_KEY_LEN 71
#define STORE_KEY_NS 'S'
#define STORE_BAD_NS 'B'
#define STORE_REC_VERSION 1
#define STORE_REC_INLINE 0x01
#define STORE_REC_HDR 16            /* bytes before inline data */
#define STORE_REC_EXT_HDR 32        /* bytes before the crc array */
#define STORE_CRC_SHIFT 16
#define STORE_CRC_BLOCK (1u << STORE_CRC_SHIFT)

/* A shard's identity. */
struct store_key {
	uint32_t pg;                 /* placement group */
	uint8_t shard;               /* shard index within the object's stripe */
	uint8_t oid_len;             /* 1..STORE_OID_MAX */
	uint8_t oid[STORE_OID_MAX];  /* object id bytes (any bytes) */
};

/* A decoded record. Pointers point into the encoded bytes. */
struct store_rec {
	bool is_inline;
	uint32_t crc_shift;
	uint32_t crc;             /* whole-shard crc32c */
	uint64_t length;
	const uint8_t *data;      /* inline: length bytes */
	uint64_t block;           /* extent: first block */
	uint32_t blocks;
	uint32_t ncrc;
	const uint8_t *crcs;      /* extent: ncrc LE u32 */
};

/* Fill k from parts; returns 0 or -EINVAL (oid_len 0 or > 64). */
int store_key_make(struct store_key *k, uint32_t pg, const void *oid, size_t oid_len,
		   uint8_t shard);

/* Encode k (which must be valid) into out. */
void store_key_encode(const struct store_key *k, uint8_t out[STORE_KEY_LEN]);

/* The bad-shard record key of the encoded shard key k (same bytes, 'B'
 * namespace), so bad records sort like the shards they name. */
static inline void store_key_to_bad(const uint8_t k[STORE_KEY_LEN], uint8_t out[STORE_KEY_LEN])
{
	memcpy(out, k, STORE_KEY_LEN);
	out[0] = STORE_BAD_NS;
}

/* Decode; 0 or IOL_ECORRUPT (wrong length, namespace, id length, or
 * non-zero padding). */
int store_key_decode(const void *in, size_t len, struct store_key *k);

/* "pg 7 oid 'abc' shard 2" (non-printable bytes as \xNN) into out. */
void store_key_format(const struct store_key *k, char *out, size_t outlen);

/* Crc blocks for a shard of length bytes. */
static inline uint32_t store_rec_ncrc(uint64_t length)
{
	return (uint32_t)((length + STORE_CRC_BLOCK - 1) >> STORE_CRC_SHIFT);
}

/* Size of an extent record for a shard of length bytes. */
static inline size_t store_rec_extent_size(uint64_t length)
{
	return STORE_REC_EXT_HDR + 4 * (size_t)store_rec_ncrc(length);
}

/* The 16-byte header of an inline record (data follows it). */
void store_rec_encode_inline_hdr(uint8_t out[STORE_REC_HDR], uint64_t length, uint32_t crc);

/* An extent record into out[store_rec_extent_size(length)], computing the
 * per-block crcs from data[length]; returns the whole-shard crc. */
uint32_t store_rec_encode_extent(uint8_t *out, const uint8_t *data, uint64_t length,
				 uint64_t block, uint32_t blocks);

/* Decode defensively: 0, IOL_EBAD_FORMAT (newer version), IOL_ECORRUPT. */
int store_rec_decode(const void *in, size_t len, struct store_rec *r);

/* crc i of an extent record. */
uint32_t store_rec_crc_at(const struct store_rec *r, uint32_t i);

#endif
