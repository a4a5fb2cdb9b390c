/*
 * gw_data_int.h — internals shared by gw_data.c (context, pool, layout,
 * delete), gw_data_put.c, gw_data_get.c and gw_data_hedge.c (the deadline
 * queue). Not for other modules: the contract is gateway/gw_data.h.
 *
 * Everything here runs on the gw_data's loop thread, except the buffer
 * pool's release path (a buffer's last reference may drop on an OSD's loop
 * thread when the in-process transport carried it), which takes the pool's
 * mutex and touches only the pool.
 *
 * Owns nothing: shared declarations only.
 */
#ifndef GATEWAY_GW_DATA_INT_H
#define GATEWAY_GW_DATA_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/loop.h"
#include "common/proto/osd_methods.h"
#include "gateway/gw_data.h"
#include "gateway/gw_lat.h"
#include "proto/osd.pb-c.h"

enum { GWD_M_PUT = OSD_M_PUT, GWD_M_GET = OSD_M_GET, GWD_M_DEL = OSD_M_DEL };

#define GWD_CLASSES 64   /* pool size classes: 4 KiB, 6 KiB, 8 KiB, ... */
#define GWD_CODES 4      /* cached (k, m) codes */
#define GWD_OLAT_MAX 65536 /* OSD ids with read latencies of their own (d->olat) */

#define GWD_MSGS_IDLE 4096 /* idle shard request messages kept (struct gwd_msg) */

/* One ShardPut/GetShard request to an OSD, handed by reference
 * (rpc_call_ref): it lives while `hold` has references. The gw_data drops
 * its own right after the call (it never reads the request again); the
 * in-process transport holds one until the OSD answered. The last
 * reference, on whichever loop thread drops it, puts the message back on
 * its pool's free list (under pool->mu). */
struct gwd_msg {
	struct buf hold;                 /* buf_init_embedded over nothing */
	struct gwd_pool *pool;           /* a reference while out */
	struct gwd_msg *next_free;       /* pool->msgs, under pool->mu */
	Iolake__Osd__ShardKey key;
	uint8_t kb[GW_DATA_KEY_LEN];     /* key.oid points here */
	union {
		Iolake__Osd__PutShardRequest put;
		Iolake__Osd__GetShardRequest get;
	} q;
};

/* Shared buffer pool: outlives the gw_data while blocks are out. */
struct gwd_pool {
	pthread_mutex_t mu;
	void *free[GWD_CLASSES];         /* under mu: chain through the first word */
	struct gwd_msg *msgs;            /* under mu: idle request messages */
	unsigned msgs_idle;              /* under mu */
	uint64_t idle_bytes, idle_max;   /* under mu */
	atomic_uint_fast64_t buffered;   /* pool blocks out + response bytes held */
	atomic_uint_fast64_t peak;
	atomic_uint refs;                /* 1 for the gw_data + 1 per block out */
};

/* Work run on a later loop turn, so callbacks never run inside the user's
 * call that caused them. */
struct gwd_deferred {
	void (*fn)(struct gwd_deferred *w);
	struct gwd_deferred *next;
	bool queued;
};

/* Deletes every segment-shard of an object with at most `max` calls in
 * flight; done() runs when the last call has answered. */
struct gwd_walk {
	struct gw_data *d;
	struct gw_data_target t;
	uint8_t oid[GW_DATA_OID_LEN];
	uint32_t n;              /* shards per segment */
	uint32_t nsegs;          /* segments to delete: [0, nsegs) */
	uint64_t next, total;    /* next segment-shard index, nsegs * n */
	uint32_t inflight, max;
	uint32_t failed;
	void (*done)(struct gwd_walk *w);
};

/* A segment waiting for its hedge time (gw_data_get.c), or a PUT segment
 * past its write quorum waiting out its straggler grace (gw_data_put.c),
 * on d->hq (gw_data_hedge.c). */
struct gwd_hnode {
	struct gwd_hnode *prev, *next;
	uint64_t at_ms;          /* loop_now_ms() clock */
	bool queued;
	void (*fire)(struct gwd_hnode *h);  /* runs when at_ms came */
};

/* Latencies by OSD id (gw_data.c), grown on demand up to GWD_OLAT_MAX
 * ids: what one OSD's slowness moves is its own quantile only. */
struct gwd_osd_lats {
	struct gw_lat *v;
	uint32_t n;
	uint32_t q_permille;
};

/* Add a sample for OSD id (0: unknown, ignored). */
void gwd_osd_lat_add(struct gwd_osd_lats *o, uint32_t id, uint64_t us);
/* OSD id's histogram if it has enough samples (GW_LAT_EVERY), else NULL. */
const struct gw_lat *gwd_osd_lat_peek(const struct gwd_osd_lats *o, uint32_t id);
/* The lower median of the quantiles of OSDs ids[0..n) (ids without enough
 * samples skipped); fallback_us when fewer than half have them. Up to
 * n/2 - 1 slow OSDs (m at k+m with k > m) leave it at a healthy one's. */
uint32_t gwd_osd_median_us(const struct gwd_osd_lats *o, const uint32_t *ids, unsigned n,
			   uint32_t fallback_us);

struct gw_data {
	uv_loop_t *loop;
	struct gw_data_opts o;
	struct ec_code *codes[GWD_CODES];
	unsigned ncodes;
	struct gwd_pool *pool;
	struct workpool_port *hash_port;   /* o.hash_pool's, on loop; NULL: none */
	uv_timer_t kick;
	uv_timer_t hedge;        /* fires for the head of hq */
	uint64_t hedge_armed_ms; /* when it fires, 0: stopped */
	struct gwd_hnode *hq_head, *hq_tail; /* in at_ms order (gwd_hq_add) */
	struct gw_lat lat;       /* shard read latencies (us) */
	struct gwd_osd_lats olat;   /* the same by OSD id (the hedge delay) */
	struct gw_lat plat;      /* shard write latencies (us): the PUT grace */
	struct gwd_osd_lats oplat;  /* the same by OSD id */
	int handles;             /* libuv handles open: d is freed at 0 */
	struct gwd_deferred *dhead, *dtail;
	struct gw_data_put *free_puts;
	struct put_call *free_pcalls;  /* PutShard call contexts (gw_data_put.c) */
	struct gw_data_get *free_gets;
	struct get_call *free_calls;   /* GetShard call contexts (gw_data_get.c) */
	struct gwd_del *free_dels;
	struct gw_data_stats st;
};

/* The code for (k, m), built on first use. NULL on -ENOMEM/-EINVAL. */
struct ec_code *gwd_code(struct gw_data *d, unsigned k, unsigned m);

/* A buffer of n bytes (len n) from the pool, counted as buffered until its
 * last reference drops. NULL: no memory. */
struct buf *gwd_buf_get(struct gw_data *d, size_t n);

/* A request message from the pool with its hold's one reference (ours:
 * drop it with buf_unref(&m->hold) after rpc_call_ref). NULL: no memory.
 * The key is set (gwd_key) and the request cleared to its INIT with
 * q.*.key pointing at it; the caller sets the rest. put selects the kind. */
struct gwd_msg *gwd_msg_get(struct gw_data *d, bool put, uint32_t pg, const uint8_t *oid,
			    uint32_t seg, uint32_t shard);

/* Count bytes held outside the pool (response payloads): +n / -n. */
void gwd_account(struct gw_data *d, int64_t n);

void gwd_defer(struct gw_data *d, struct gwd_deferred *w);
void gwd_undefer(struct gw_data *d, struct gwd_deferred *w);

/* Shard key bytes: oid || be32(seg). */
void gwd_key(Iolake__Osd__ShardKey *k, uint8_t kb[GW_DATA_KEY_LEN], uint32_t pg,
	     const uint8_t *oid, uint32_t seg, uint32_t shard);

void gwd_walk_start(struct gwd_walk *w);

/* Free the idle operation structs (gw_data_free). */
void gwd_put_free_list(struct gw_data *d);
void gwd_get_free_list(struct gw_data *d);

/* The hedge timer's callback (gw_data_hedge.c). */
void gwd_hedge_fire(uv_timer_t *t);
/* Current hedge delay in ms (clamped p95). */
uint32_t gwd_hedge_delay_ms(const struct gw_data *d);
/* The quorum PUT grace in ms (gw_data_put.c): 2 x p99 of shard writes,
 * clamped. */
uint32_t gwd_put_grace_ms(const struct gw_data *d);
/* Queue h on d->hq to fire (h->fire(h)) at at_ms, in at_ms order; or take
 * it off (no-op when not queued). */
void gwd_hq_add(struct gw_data *d, struct gwd_hnode *h, uint64_t at_ms);
void gwd_hq_del(struct gw_data *d, struct gwd_hnode *h);

/* Layout arrays for nsegs segments of n shards: 0 or -ENOMEM. */
int gwd_layout_alloc(struct gw_data_layout *l);
/* Basic consistency (k, m, sizes, nsegs): 0 or -EINVAL. */
int gwd_layout_check(const struct gw_data_layout *l);

#endif
