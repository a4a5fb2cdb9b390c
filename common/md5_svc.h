/*
 * md5_svc.h — the process's multi-buffer MD5 service: chunks of many
 * streams, given as their bytes arrive, hashed together in the lanes of
 * common/md5_mb on a few threads of its own ("iolake-md5").
 *
 * Why a service: MD5 is sequential within a stream, so lanes are filled
 * only by different streams at the same time. A PUT feeds its body here
 * in chunks as it arrives (gw_data_put: every 128 KiB appended to the
 * segment), every stream with bytes waiting holds a lane, and the digest
 * is ready about when the last byte arrives (docs/architecture.md).
 *
 * Contract:
 *  - A stream (struct md5_svc_stream) and its chunks (struct
 *    md5_svc_chunk) are embedded in their owner; the service allocates
 *    nothing per stream or chunk. A chunk's bytes must stay alive and
 *    unchanged from md5_svc_submit until its done callback.
 *  - One stream's chunks are hashed in submit order, and their done
 *    callbacks are called in that order, on a service thread, outside the
 *    service's lock (done may take other locks; it must not submit). done
 *    is the last touch of the chunk and, when the stream has no other
 *    chunk queued, of the stream.
 *  - The stream's context (st->ctx) is the owner's whenever none of its
 *    chunks is outstanding: it may then hash inline into it, take the
 *    digest (md5_mb_final) or free the stream. The done callback's
 *    hand-off (a mutex) orders the service's writes before the owner's
 *    reads.
 *  - A stream holds a lane only while it has chunks queued: one that
 *    stops being fed (a client gone mid-body) gives its lane back after
 *    its last chunk, at most the chunks its owner submitted.
 *  - Submitting never blocks on hashing: it appends under a mutex held
 *    for a few instructions by the threads between passes.
 *  - Lanes are gathered: with fewer than 8 streams in its lanes and no
 *    urgent chunk among them, a thread waits up to MD5_SVC_GATHER_US
 *    after its oldest chunk's submit for more streams before hashing
 *    (the bodies of 8 PUTs arrive a chunk at a time, slower than one
 *    thread hashes them: without the wait it would hash 1-3 lanes at a
 *    time). An urgent chunk (the end of a body, which a reply waits for)
 *    ends the wait at once.
 *
 * Does not: know buffers, loops or ports (the owner's done callback hands
 * the completion to its loop: common/hash_async.c), bound the chunks
 * (owners do: their embedded chunks), stop (the threads live as long as
 * the process, idle on a condition variable).
 */
#ifndef COMMON_MD5_SVC_H
#define COMMON_MD5_SVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/md5_mb.h"

struct md5_svc;
struct md5_svc_chunk;

/* The longest a chunk not urgent waits for other streams to fill lanes. */
#define MD5_SVC_GATHER_US 2000

typedef void (*md5_svc_done_fn)(struct md5_svc_chunk *c);

struct md5_svc_chunk {
	const uint8_t *data;
	size_t len;
	md5_svc_done_fn done;
	bool urgent;               /* someone waits for it (a body's end): hash
				    * it now, not after gathering lanes */
	/* The service's. */
	struct md5_svc_chunk *next;
	uint64_t t_ns;             /* submitted (CLOCK_MONOTONIC) */
};

struct md5_svc_stream {
	struct md5_mb_ctx ctx;         /* the owner's when nothing is queued */
	/* The service's, under its lock. */
	struct md5_svc_chunk *head, *tail;
	struct md5_svc_stream *next_ready;
	bool ready;                    /* on the ready list */
	bool in_lane;                  /* a thread is hashing it */
};

/* The process's service, started by the first call with nthreads threads
 * (0: 1; later calls' nthreads are ignored). NULL when the CPU has no
 * lane kernel (md5_mb_lanes() < 8: OpenSSL alone is as fast), or when
 * the threads could not start (logged). Thread-safe. */
struct md5_svc *md5_svc_get(unsigned nthreads);

/* A fresh stream (ctx started). */
void md5_svc_stream_init(struct md5_svc_stream *st);

/* Queue c (data, len >= 1 and done set by the caller) after st's earlier
 * chunks. Any thread, but one stream's submits from one thread at a
 * time. */
void md5_svc_submit(struct md5_svc *s, struct md5_svc_stream *st, struct md5_svc_chunk *c);

struct md5_svc_stats {
	unsigned threads, lanes;
	uint64_t chunks;       /* chunks hashed */
	uint64_t bytes;        /* their bytes */
	uint64_t passes;       /* kernel calls (md5_mb_update_n) */
	uint64_t lane_bytes;   /* sum over passes of every busy lane's bytes */
	uint64_t span_bytes;   /* sum over passes of the longest lane's bytes:
				* lane_bytes / span_bytes = lanes busy on average */
	uint64_t streams_max;  /* most streams in lanes at once */
};

/* A snapshot of s's counters since start. Thread-safe. */
void md5_svc_stats(struct md5_svc *s, struct md5_svc_stats *out);

struct metrics_registry;

/* Gauges of the process's service on reg (zeros until it starts):
 * iolake_md5_mb_lanes, _bytes, _chunks, _passes, _lane_bytes,
 * _span_bytes (lanes busy on average over a window: the delta of
 * lane_bytes over the delta of span_bytes), _lanes_busy_avg (since
 * start). Once per registry. */
void md5_svc_register_metrics(struct metrics_registry *reg);

#endif
