/*
 * hash_async.h — an ordered hash stream (MD5 and/or SHA-256 in one pass)
 * whose updates run on a workpool worker, for bodies too large to hash on
 * an event loop.
 *
 * Updates are ranges of refcounted buffers (struct buf): each one takes a
 * reference to its buffer and drops it on the owning loop when its job has
 * hashed the range — the lifetime rule shared with gw_data's buffers: the
 * bytes of the range must not change until then (gw_data fills a segment
 * buffer, then shares it read-only with the shard calls and this job).
 * Updates of one stream are hashed in the order given (a wp_strand);
 * streams run in parallel.
 *
 * A stream has a fixed number of job slots (given at creation, embedded,
 * no allocation per update): an update with every slot busy is refused
 * (-EAGAIN) and the owner retries after its on_job callback.
 *
 * A stream of MD5 alone, with a port, on a CPU with MD5 lanes (AVX2 or
 * AVX-512), goes to the multi-buffer MD5 service (common/md5_svc.h)
 * instead of the pool's workers: its updates share vector lanes with
 * every other stream's, in order; completions come back through the same
 * port. Streams with SHA-256 stay on the pool (one pass for both).
 *
 * With no port (NULL), or for an update below `inline_bytes`, the range
 * is hashed at once on the calling thread, as a plain hash_stream would.
 * Loop: one (the port's); not thread-safe.
 *
 * Does not decide what to compare the digest with, nor own the buffers.
 */
#ifndef COMMON_HASH_ASYNC_H
#define COMMON_HASH_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/hash.h"
#include "common/workpool.h"

enum { HASH_ASYNC_MD5 = 1, HASH_ASYNC_SHA256 = 2 };

struct hash_async;

/* Called on the loop after a job of h completed (a slot is free again). */
typedef void (*hash_async_cb)(struct hash_async *h, void *ud);

/* A stream of the algorithms in mask algs with slots job slots (>= 1),
 * completing through pt (NULL: everything inline, cb never called).
 * NULL: out of memory. */
struct hash_async *hash_async_new(struct workpool_port *pt, unsigned algs, unsigned slots,
				  hash_async_cb cb, void *ud);

/* Hash only the algorithms in algs from now on (a subset of HASH_ASYNC_*;
 * the missing ones are made). Requires hash_async_pending(h) == 0 and a
 * fresh stream (after final). 0 or -ENOMEM. */
int hash_async_set_algs(struct hash_async *h, unsigned algs);

/* Whether updates from now on are waited for at once (true, the
 * default): false lets the MD5 lanes service hold them up to
 * MD5_SVC_GATHER_US to hash them beside other streams' (md5_svc.h), for
 * an owner that waits only for its last update (set true before that
 * one). No effect off the lanes path. */
void hash_async_set_urgent(struct hash_async *h, bool urgent);

/* Change the callback (for streams kept across reuse). */
void hash_async_set_cb(struct hash_async *h, hash_async_cb cb, void *ud);

/* Hash len bytes of b from off, after everything given before. 0: queued
 * (a reference to b is held until the job completes) or hashed inline
 * (len < inline_bytes, or no port); -EAGAIN: every slot busy, nothing
 * taken. */
int hash_async_update(struct hash_async *h, struct buf *b, size_t off, size_t len,
		      size_t inline_bytes);

/* Hash bytes the caller keeps only for this call: always inline (the
 * stream's earlier jobs must have completed: -EBUSY otherwise). */
int hash_async_update_now(struct hash_async *h, const void *data, size_t len);

/* Jobs queued or running. */
unsigned hash_async_pending(const struct hash_async *h);

/* The digests (md5 16 bytes, sha256 32; either NULL if not wanted) and a
 * reset for another stream. Requires hash_async_pending(h) == 0. */
void hash_async_final(struct hash_async *h, uint8_t *md5, uint8_t *sha256);

/* Requires hash_async_pending(h) == 0. NULL is ignored. */
void hash_async_free(struct hash_async *h);

#endif
