/*
 * aio_osd.h — one OSD of iolake-aio on its own loop thread: the service,
 * its store (a sparse file), its RPC listener ("local:osd-N", and
 * 127.0.0.1 with --rpc loopback), its meta link (registration as host
 * aio-N, heartbeats), the orphan sweep and the recovery driver; and their
 * shutdown in order. Split out of aio/main.c (issue 19).
 *
 * Owns struct osd_slot's services. Not the thread's creation (main.c
 * starts lt and runs aio_osd_start_fn on it), nor meta or the gateway.
 *
 * Thread: aio_osd_start_fn on the slot's loop thread; aio_osd_stop from
 * aio's main thread (it blocks).
 */
#ifndef AIO_AIO_OSD_H
#define AIO_AIO_OSD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/loop.h"

struct store_cache;

struct metrics_registry;
struct osd_service;
struct osd_recover;
struct store;
struct rpc_server;
struct osd_sweep;
struct osd_metaclient;

/* aio's flags for its OSDs (the same for each). */
struct aio_osd_opts {
	struct metrics_registry *reg;
	const char *meta_target;      /* what the OSD dials for meta */
	bool loopback;                /* --rpc loopback: also listen on 127.0.0.1 */
	uint64_t osd_size;
	struct store_cache *cache;    /* --osd-cache, shared by every OSD */
	uint64_t write_buffer_bytes;  /* --osd-write-buffer */
	uint64_t scrub_rate, scrub_interval_ms, slow_op_ms;
	uint64_t orphan_interval_ms, orphan_grace_ms;   /* interval 0: no sweep */
	uint64_t recovery_rate, recovery_rescan_ms, deep_scrub_ms, pg_report_ms;
	int64_t recovery_max_pgs;
	uint32_t beat_ms, retry_ms;   /* heartbeats; meta link backoff */
};

struct osd_slot {
	const struct aio_osd_opts *opt;  /* aio's, outlives the slot */
	uint32_t id;
	struct loop_thread lt;
	struct metrics_registry *reg;
	struct osd_service *svc;
	struct osd_recover *rec;
	struct store *st;
	struct rpc_server *rpc;
	struct osd_sweep *sweep;  /* NULL: off */
	char dir[4096];
	char addr[64];            /* what meta is told */
	uint64_t capacity;
	int rc;                   /* start result */
	char err[512];
	struct osd_metaclient *mc;  /* registration and heartbeats, on lt */
	atomic_bool registered;     /* meta acked it once (read by the main loop) */
};

/* Start the OSD's services (on o->lt; id, dir and opt set). o->rc 0, or
 * an error with o->err saying what. */
void aio_osd_start_fn(void *arg);

/* Stop the services in order (meta link, recovery driver, sweep, drain,
 * store) and the thread; from aio's main thread. */
void aio_osd_stop(struct osd_slot *o);

#endif
