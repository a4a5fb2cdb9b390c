/*
 * wire.h — reading protobuf wire bytes without unpacking them (meta's
 * apply and listings look at one field of a stored record at no
 * allocation: a delete marker's flag, a layout's shard id, the bucket
 * digest that leaves out the lifecycle cursor).
 *
 * Only what the stored records use: varint, 64-bit, length-delimited and
 * 32-bit fields; a group (wire types 3 and 4) is malformed here.
 */
#ifndef META_WIRE_H
#define META_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One field as meta_wire_next read it. */
struct meta_wire_field {
	uint32_t num;          /* field number */
	unsigned type;         /* wire type: 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint64_t varint;       /* type 0: the value */
	const uint8_t *data;   /* type 2: the bytes (len of them) */
	size_t len;
};

/* Read the field at *p (before end) into *f and move *p past it. false:
 * truncated or malformed (*p then undefined). */
bool meta_wire_next(const uint8_t **p, const uint8_t *end, struct meta_wire_field *f);

#endif
