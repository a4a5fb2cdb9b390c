/*
 * gw_md5b.h — one gateway loop's one-shot MD5 digests, hashed together at
 * the end of the loop's turn in the lanes of common/md5_mb (issue 19: a
 * small PUT's ETag is the MD5 of its inline body; OpenSSL's scalar MD5 of
 * 4 KiB was the largest piece of the gateway loops' own CPU per PUT,
 * docs/performance.md, branch gwput4k).
 *
 * Why at the end of the turn: the bodies of the PUTs a loop reads in one
 * turn all finish in that turn's I/O callbacks; a uv_check runs after
 * them, before the loop polls again, so no digest waits for another
 * event. An idle handle is active while items are queued, so that an
 * item queued outside the poll phase (a timer) does not make the poll
 * block before the check runs.
 *
 * Contract:
 *  - An item (struct gw_md5b_item) is embedded in its owner; its bytes
 *    must stay alive and unchanged until its done callback or cancel.
 *  - gw_md5b_queue: true when queued (done runs later, on this loop, with
 *    the digest in it->digest), false when not (no batch, the batch full,
 *    or called from a done callback): the caller hashes itself.
 *  - gw_md5b_cancel before freeing an item that may be queued; a no-op
 *    for one that is not.
 *  - gw_md5b_close drops what is queued (no done runs) and frees the
 *    batch a loop turn later.
 *
 * Does not: know PUTs or ETags' hex (the owner does), hash anything but
 * whole one-shot buffers.
 *
 * Thread: the loop given to gw_md5b_new; no locking.
 */
#ifndef GATEWAY_GW_MD5B_H
#define GATEWAY_GW_MD5B_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define GW_MD5B_SLOTS 64   /* items per turn; more are hashed by their callers */

struct gw_md5b;
struct gw_md5b_item;
typedef void (*gw_md5b_done_fn)(struct gw_md5b_item *it);

struct gw_md5b_item {
	const uint8_t *data;        /* the bytes (the caller's) */
	size_t len;
	gw_md5b_done_fn done;       /* called once with the digest, unless cancelled */
	uint8_t digest[16];         /* written before done */
	struct gw_md5b *b;          /* the batch it is queued in; NULL: not queued */
	unsigned slot;
};

/* A batch on loop; NULL when out of memory (callers then hash themselves). */
struct gw_md5b *gw_md5b_new(uv_loop_t *loop);

/* Drop queued items (their done never runs) and free b a loop turn later. */
void gw_md5b_close(struct gw_md5b *b);

/* Queue it (data, len, done set by the caller): see the contract. */
bool gw_md5b_queue(struct gw_md5b *b, struct gw_md5b_item *it);

/* Take it out of its batch if queued. */
void gw_md5b_cancel(struct gw_md5b_item *it);

/* Turns that hashed, and items they hashed (for tests and benches). */
void gw_md5b_counts(const struct gw_md5b *b, uint64_t *turns, uint64_t *items);

#endif
