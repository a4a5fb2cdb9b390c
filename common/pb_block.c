/*
 * pb_block.c — deep copies of protobuf-c messages in one block (contract
 * in pb_block.h).
 *
 * Layout: the first block holds its header, then the bump region, whose
 * first allocation is the message itself (protobuf_c_message_unpack
 * allocates the top message before anything else; checked), so the
 * header is found again from the message's address. The packed form is
 * written at the block's end and read from there while the bump region
 * grows from the front: the region stops where the packed bytes start,
 * and what does not fit goes to further blocks chained from the first.
 * A copy of a 4 KiB inline PutObject is one block.
 *
 * Owns nothing beyond the copies it returns; no locks, no globals.
 */
#include "common/pb_block.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct blk {
	struct blk *next;    /* further blocks (first block only) */
	size_t used, limit;  /* bump region: data[0, limit) */
	max_align_t data[];
};

#define ALIGN(n) (((n) + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1))

/* Unpacked, a message takes more than its packed form (structs with every
 * field, pointer arrays): a first block of this many bytes is nearly
 * always enough. */
static size_t first_cap(const ProtobufCMessageDescriptor *d, size_t packed)
{
	return ALIGN(d->sizeof_message) + ALIGN(2 * packed + 1024) + ALIGN(packed);
}

struct bump {
	struct blk *first;
	bool oom;
};

static void *bump_alloc(void *ud, size_t n)
{
	struct bump *b = ud;
	n = ALIGN(n ? n : 1);
	struct blk *f = b->first;
	if (f->limit - f->used >= n) {
		void *p = (char *)f->data + f->used;
		f->used += n;
		return p;
	}
	struct blk *x = malloc(sizeof(*x) + n);
	if (!x) {
		b->oom = true;
		return NULL;
	}
	x->used = x->limit = n;
	x->next = f->next;
	f->next = x;
	return x->data;
}

static void bump_free(void *ud, void *p)
{
	(void)ud;
	(void)p;   /* all at once, in pb_block_free */
}

static void blocks_free(struct blk *f)
{
	struct blk *x = f->next;
	while (x) {
		struct blk *next = x->next;
		free(x);
		x = next;
	}
	free(f);
}

ProtobufCMessage *pb_block_copy(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	size_t cap = first_cap(m->descriptor, len);
	struct blk *f = malloc(sizeof(*f) + cap);
	if (!f)
		return NULL;
	f->next = NULL;
	f->used = 0;
	f->limit = cap - ALIGN(len);
	uint8_t *packed = (uint8_t *)f->data + f->limit;
	protobuf_c_message_pack(m, packed);
	struct bump b = { .first = f };
	ProtobufCAllocator al = { .alloc = bump_alloc, .free = bump_free, .allocator_data = &b };
	ProtobufCMessage *copy = protobuf_c_message_unpack(m->descriptor, &al, len, packed);
	if (!copy || b.oom || (void *)copy != (void *)f->data) {
		blocks_free(f);
		return NULL;
	}
	return copy;
}

void pb_block_free(ProtobufCMessage *copy)
{
	if (copy)
		blocks_free((struct blk *)((char *)copy - offsetof(struct blk, data)));
}
