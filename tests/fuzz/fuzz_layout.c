/*
 * fuzz_layout.c — libFuzzer target for the gateway's object layout
 * decoder (gateway/gw_data.c gw_data_layout_decode): the bytes an object
 * record in meta carries (ObjectRecord.data_layout) naming the erasure
 * code, segments, placement group and the crc of every shard. A damaged
 * record must give IOL_ECORRUPT, never a crash. What decodes must be
 * self-consistent (segment count from size and segment bytes, every
 * segment's length within the object) and survive an encode and a second
 * decode unchanged.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/gw_data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_data_layout l;
	memset(&l, 0, sizeof(l));
	int rc = gw_data_layout_decode(data, size, &l);
	if (rc) {
		if (rc != IOL_ECORRUPT && rc != -ENOMEM)
			__builtin_trap();
		return 0;
	}
	if (l.nsegs != gw_data_layout_nsegs(l.size, l.segment_bytes))
		__builtin_trap();
	uint64_t sum = 0;
	for (uint32_t s = 0; s < l.nsegs; s++) {
		uint32_t len = gw_data_layout_seg_len(&l, s);
		if (len == 0 || len > l.segment_bytes)
			__builtin_trap();
		sum += len;
		(void)gw_data_layout_shard_len(&l, s);
	}
	if (sum != l.size)
		__builtin_trap();
	size_t n = gw_data_layout_encoded_len(&l);
	uint8_t *out = malloc(n ? n : 1);
	if (out && gw_data_layout_encode(&l, out, n) == (ssize_t)n) {
		struct gw_data_layout m;
		memset(&m, 0, sizeof(m));
		if (gw_data_layout_decode(out, n, &m) != 0)
			__builtin_trap();   /* what we write, we read */
		if (m.k != l.k || m.m != l.m || m.size != l.size || m.pg != l.pg ||
		    m.segment_bytes != l.segment_bytes || m.nsegs != l.nsegs ||
		    memcmp(m.object_id, l.object_id, sizeof(l.object_id)) ||
		    (l.nsegs && memcmp(m.crcs, l.crcs, (size_t)l.nsegs * (l.k + l.m) * 4)))
			__builtin_trap();
		gw_data_layout_clear(&m);
	}
	free(out);
	gw_data_layout_clear(&l);
	return 0;
}
