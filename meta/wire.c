/*
 * wire.c — one protobuf field at a time out of wire bytes (wire.h).
 * Pure: no allocation, any thread. Does not know any message's fields:
 * its callers pick theirs by number.
 */
#include "meta/wire.h"

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned sh = 0; sh < 64; sh += 7) {
		if (*p == end)
			return false;
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

bool meta_wire_next(const uint8_t **p, const uint8_t *end, struct meta_wire_field *f)
{
	uint64_t tag, v;
	if (!varint(p, end, &tag) || tag >> 3 > UINT32_MAX)
		return false;
	f->num = (uint32_t)(tag >> 3);
	f->type = (unsigned)(tag & 7);
	switch (f->type) {
	case 0:
		return varint(p, end, &f->varint);
	case 1:
		if (end - *p < 8)
			return false;
		*p += 8;
		return true;
	case 5:
		if (end - *p < 4)
			return false;
		*p += 4;
		return true;
	case 2:
		if (!varint(p, end, &v) || v > (uint64_t)(end - *p))
			return false;
		f->data = *p;
		f->len = (size_t)v;
		*p += v;
		return true;
	default:
		return false;
	}
}
