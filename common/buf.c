/*
 * buf.c — allocation and release of reference-counted buffers.
 *
 * buf_new_aligned() makes one allocation: the struct sits just before the
 * aligned data, so a buffer costs one malloc and one free.
 */
#include "common/buf.h"

#include <stdlib.h>
#include <string.h>

struct buf *buf_new_aligned(size_t cap, size_t align)
{
	if (align < 16)
		align = 16;
	/* Header rounded up to the alignment, data right after it. */
	size_t hdr = (sizeof(struct buf) + align - 1) & ~(align - 1);
	if (cap > SIZE_MAX - hdr)
		return NULL;
	void *mem = NULL;
	if (posix_memalign(&mem, align, hdr + (cap ? cap : 1)) != 0)
		return NULL;
	struct buf *b = (struct buf *)((uint8_t *)mem + hdr - sizeof(struct buf));
	atomic_init(&b->refs, 1);
	b->data = (uint8_t *)mem + hdr;
	b->len = 0;
	b->cap = cap;
	b->release = NULL;
	b->owner = mem;
	b->embedded = 0;
	return b;
}

struct buf *buf_new(size_t cap)
{
	return buf_new_aligned(cap, 64);
}

struct buf *buf_copy(const void *data, size_t len)
{
	struct buf *b = buf_new(len);
	if (b && len) {
		memcpy(b->data, data, len);
		b->len = len;
	}
	return b;
}

struct buf *buf_wrap(void *data, size_t len, buf_release_fn release, void *owner)
{
	struct buf *b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->data = data;
	b->len = len;
	b->cap = len;
	b->release = release;
	b->owner = owner;
	b->embedded = 0;
	return b;
}

void buf_init_embedded(struct buf *b, void *data, size_t len, buf_release_fn release,
		       void *owner)
{
	atomic_init(&b->refs, 1);
	b->data = data;
	b->len = len;
	b->cap = len;
	b->release = release;
	b->owner = owner;
	b->embedded = 1;
}

void buf_unref(struct buf *b)
{
	if (!b)
		return;
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (b->embedded) {
		b->release(b);   /* owns b's memory */
	} else if (b->release) {
		b->release(b);
		free(b);
	} else {
		free(b->owner); /* the one allocation made by buf_new_aligned */
	}
}
