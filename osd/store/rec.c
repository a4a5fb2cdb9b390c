/*
 * rec.c — key and record codecs for the shard index (formats in rec.h).
 *
 * Pure functions, any thread. Invariant: store_rec_decode never reads
 * past len and accepts only records whose every count agrees with the
 * length (a record that passes can be used without further checks).
 */
#include "osd/store/rec.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h"
#include "common/crc.h"
#include "common/crc_combine.h"
#include "common/err.h"
#include "osd/store/super.h"

static inline void put16(uint8_t *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static inline uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static inline uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static inline uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

int store_key_make(struct store_key *k, uint32_t pg, const void *oid, size_t oid_len,
		   uint8_t shard)
{
	if (oid_len == 0 || oid_len > STORE_OID_MAX)
		return -EINVAL;
	memset(k, 0, sizeof(*k));
	k->pg = pg;
	k->shard = shard;
	k->oid_len = (uint8_t)oid_len;
	memcpy(k->oid, oid, oid_len);
	return 0;
}

void store_key_encode(const struct store_key *k, uint8_t out[STORE_KEY_LEN])
{
	memset(out, 0, STORE_KEY_LEN);
	out[0] = STORE_KEY_NS;
	uint32_t be = htobe32(k->pg);
	memcpy(out + 1, &be, 4);
	memcpy(out + 5, k->oid, k->oid_len);
	out[69] = k->oid_len;
	out[70] = k->shard;
}

int store_key_decode(const void *in, size_t len, struct store_key *k)
{
	const uint8_t *p = in;
	if (len != STORE_KEY_LEN || p[0] != STORE_KEY_NS)
		return IOL_ECORRUPT;
	uint8_t n = p[69];
	if (n == 0 || n > STORE_OID_MAX)
		return IOL_ECORRUPT;
	for (size_t i = 5 + (size_t)n; i < 69; i++)
		if (p[i])
			return IOL_ECORRUPT;
	uint32_t be;
	memcpy(&be, p + 1, 4);
	memset(k, 0, sizeof(*k));
	k->pg = be32toh(be);
	k->oid_len = n;
	memcpy(k->oid, p + 5, n);
	k->shard = p[70];
	return 0;
}

void store_key_format(const struct store_key *k, char *out, size_t outlen)
{
	char oid[4 * STORE_OID_MAX + 1];
	size_t o = 0;
	for (size_t i = 0; i < k->oid_len && i < STORE_OID_MAX; i++) {
		uint8_t c = k->oid[i];
		if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
			oid[o++] = (char)c;
		else
			o += (size_t)snprintf(oid + o, sizeof(oid) - o, "\\x%02x", c);
	}
	oid[o] = '\0';
	snprintf(out, outlen, "pg %u oid '%s' shard %u", k->pg, oid, k->shard);
}

void store_rec_encode_inline_hdr(uint8_t out[STORE_REC_HDR], uint64_t length, uint32_t crc)
{
	out[0] = STORE_REC_VERSION;
	out[1] = STORE_REC_INLINE;
	put16(out + 2, STORE_CRC_SHIFT);
	put32(out + 4, crc);
	put64(out + 8, length);
}

uint32_t store_rec_encode_extent(uint8_t *out, const uint8_t *data, uint64_t length,
				 uint64_t block, uint32_t blocks)
{
	/* The decoder refuses a record whose counts disagree: never write one. */
	IOL_ASSERT(length > 0 && length <= ((uint64_t)UINT32_MAX << 12));
	IOL_ASSERT(blocks == (length + STORE_BLOCK_SIZE - 1) / STORE_BLOCK_SIZE);
	uint32_t n = store_rec_ncrc(length);
	uint32_t whole = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i << STORE_CRC_SHIFT;
		size_t len = length - off < STORE_CRC_BLOCK ? (size_t)(length - off) : STORE_CRC_BLOCK;
		uint32_t c = crc32c(0, data + off, len);
		put32(out + STORE_REC_EXT_HDR + 4 * (size_t)i, c);
		/* One pass over the bytes: the whole shard's crc from the
		 * blocks' (about a third of a second pass's cost per 64 KiB). */
		whole = i ? (uint32_t)crc_combine(CRC_KIND_CRC32C, whole, c, len) : c;
	}
	out[0] = STORE_REC_VERSION;
	out[1] = 0;
	put16(out + 2, STORE_CRC_SHIFT);
	put32(out + 4, whole);
	put64(out + 8, length);
	put64(out + 16, block);
	put32(out + 24, blocks);
	put32(out + 28, n);
	return whole;
}

int store_rec_decode(const void *in, size_t len, struct store_rec *r)
{
	const uint8_t *p = in;
	if (len < STORE_REC_HDR)
		return IOL_ECORRUPT;
	if (p[0] > STORE_REC_VERSION)
		return IOL_EBAD_FORMAT;
	if (p[0] != STORE_REC_VERSION || (p[1] & ~STORE_REC_INLINE))
		return IOL_ECORRUPT;
	memset(r, 0, sizeof(*r));
	r->is_inline = p[1] & STORE_REC_INLINE;
	r->crc_shift = get16(p + 2);
	r->crc = get32(p + 4);
	r->length = get64(p + 8);
	if (r->crc_shift != STORE_CRC_SHIFT)
		return IOL_ECORRUPT;
	if (r->is_inline) {
		if (r->length != len - STORE_REC_HDR)
			return IOL_ECORRUPT;
		r->data = p + STORE_REC_HDR;
		return 0;
	}
	if (len < STORE_REC_EXT_HDR || r->length == 0 ||
	    r->length > ((uint64_t)UINT32_MAX << 12))
		return IOL_ECORRUPT;
	r->block = get64(p + 16);
	r->blocks = get32(p + 24);
	r->ncrc = get32(p + 28);
	uint64_t want_blocks = (r->length + STORE_BLOCK_SIZE - 1) / STORE_BLOCK_SIZE;
	if (r->blocks != want_blocks || r->ncrc != store_rec_ncrc(r->length) ||
	    len != STORE_REC_EXT_HDR + 4 * (size_t)r->ncrc)
		return IOL_ECORRUPT;
	r->crcs = p + STORE_REC_EXT_HDR;
	return 0;
}

uint32_t store_rec_crc_at(const struct store_rec *r, uint32_t i)
{
	return get32(r->crcs + 4 * (size_t)i);
}
