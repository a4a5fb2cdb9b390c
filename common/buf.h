/*
 * buf.h — reference-counted byte buffers, the unit in which payloads (shard
 * bytes, object bodies) move between modules and threads without copies.
 *
 * A buf is created with one reference. Whoever keeps a pointer beyond the
 * call that handed it over takes a reference (buf_ref) and drops it
 * (buf_unref) when done; the last unref releases the memory. Counts are
 * atomic, so a buf may be handed from one loop thread to another. The bytes
 * themselves are not synchronised: a buf is filled by one owner, then
 * shared read-only.
 */
#ifndef COMMON_BUF_H
#define COMMON_BUF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
typedef void (*buf_release_fn)(struct buf *b);

struct buf {
	atomic_uint refs;
	uint8_t *data;          /* first byte */
	size_t len;             /* bytes in use */
	size_t cap;             /* bytes available at data */
	buf_release_fn release; /* called by the last unref (wrapped memory) */
	void *owner;            /* for release: the pool or object the bytes belong to */
	uint8_t embedded;       /* buf_init_embedded: the struct is the caller's */
};

/* A new buffer of cap bytes (len 0), data aligned to align (a power of two,
 * at least 16; 4096 for O_DIRECT). NULL when out of memory. */
struct buf *buf_new_aligned(size_t cap, size_t align);

/* buf_new_aligned(cap, 64). */
struct buf *buf_new(size_t cap);

/* A new buffer holding a copy of len bytes. */
struct buf *buf_copy(const void *data, size_t len);

/* Wrap memory the caller owns. When the last reference goes, release(b) runs
 * (it must free the memory it owns) and then the struct is freed. */
struct buf *buf_wrap(void *data, size_t len, buf_release_fn release, void *owner);

/* Make b, a struct inside an object of the caller's, a buffer with one
 * reference over data/len (may be NULL/0). The last unref runs release(b)
 * and frees nothing itself: release owns b's object (it may put it back on
 * a free list; it may run on whichever thread drops the last reference).
 * This is how an object that must outlive every reader — an RPC request
 * message handed by reference (rpc_call_ref) — is reference-counted
 * without an allocation of its own. */
void buf_init_embedded(struct buf *b, void *data, size_t len, buf_release_fn release,
		       void *owner);

static inline struct buf *buf_ref(struct buf *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	return b;
}

/* Drop a reference; NULL is allowed and ignored. */
void buf_unref(struct buf *b);

/* A view of part of a buf: what RPC payloads and shard bodies are. */
struct buf_slice {
	struct buf *buf;  /* NULL: empty */
	size_t off;
	size_t len;
};

static inline const uint8_t *buf_slice_data(const struct buf_slice *s)
{
	return s->buf ? s->buf->data + s->off : NULL;
}

#endif
