/*
 * service.h — the OSD's RPC service (iolake.osd.Osd, common/proto/osd.proto)
 * over one shard store: the one header of osd/ that other services and
 * binaries include (with osd/metaclient.h for the binary).
 *
 * Owns: the method handlers, a pool of in-flight call contexts sized at
 * creation (the bound on store work in flight), and the OSD's metrics in
 * the registry it is given. Runs on one loop: the store's, which is also
 * the RPC server's; every function here is called on that loop's thread.
 *
 * Admission: a PutShard/GetShard/DeleteShard takes a context from the pool
 * and, for puts, counts its payload against a byte budget; when either is
 * exhausted the call fails at once with RESOURCE_EXHAUSTED ("busy", retry
 * with backoff) instead of queueing without bound. Metadata calls (stat,
 * stat-many, list, status) are synchronous RocksDB reads, bounded by their
 * own per-call limits.
 *
 * Direct reads: registered on an in-process server, a client GetShard of
 * an inline shard in RocksDB's memory is served on the CALLER's thread
 * (rpc_direct_fn; the only code of the service that runs off its loop),
 * counted against the same max_inflight, in the same metrics and slow-op
 * log; everything else goes to the loop (service.c, d_get).
 *
 * Scrub: the service runs the store's background scrubber
 * (osd/store/scrub.h) from attach to drain, logs each newly found bad
 * shard once (WARN), exports its counters and serves ListBadShards.
 *
 * Recovery: the service does not know the recovery driver; hooks
 * (osd_service_set_hooks) hand it each PG with a newly found bad shard and
 * let it fill the recovery fields of Status.
 *
 * Does not: own the store or the server (the caller opens and closes them),
 * log per request (errors are counted in metrics and returned to callers),
 * or serve HTTP /metrics (the Status call carries the rendered text until a
 * shared HTTP endpoint exists in common/).
 */
#ifndef OSD_SERVICE_H
#define OSD_SERVICE_H

#include <stdint.h>
#include <uv.h>

#include "common/metrics.h"
#include "common/rpc.h"
#include "osd/store/store.h"

struct osd_service;

struct osd_service_opts {
	uint32_t osd_id;
	uint8_t cluster_id[16];
	uint32_t max_inflight;        /* store calls in flight; 0: 256 */
	uint64_t max_inflight_bytes;  /* put payload bytes in flight; 0: 1 GiB */
	uint32_t gauge_refresh_ms;    /* space / queue gauges refresh; 0: 1000 */
	uint32_t bg_max_wait_ms;      /* a parked background call goes anyway
	                               * after this; 0: BG_MAX_WAIT_MS (100) */
	struct metrics_registry *metrics; /* required; series labelled osd=<id> */
	uint64_t scrub_rate_bytes;    /* background scrub, bytes/s; 0: off */
	uint64_t scrub_interval_ms;   /* between scrub passes */
	/* Slow-op log (slow_log): a PutShard, GetShard or DeleteShard taking
	 * slow_op_ms or more from arrival to answer is logged at warn with
	 * the caller's request id, PG, shard, and its time queued (parked
	 * behind client calls) vs in the store (index + device). Every
	 * GetShard is also logged at debug. */
	bool slow_log;
	uint32_t slow_op_ms;
};

/*
 * Create the service on loop and register its metrics (labelled with the
 * OSD id, so several OSDs may share one registry). Returns 0 with *out,
 * -EINVAL (no registry), -EEXIST (this OSD id's metrics already
 * registered) or -ENOMEM. Attach a store before registering with a server.
 */
int osd_service_new(uv_loop_t *loop, const struct osd_service_opts *opts,
		    struct osd_service **out);

/* Hooks for store_opts.observer, so the store's commit batch sizes and
 * flush latencies land in this service's histograms. Valid as long as svc
 * lives (close the store before freeing svc). */
struct store_observer osd_service_observer(struct osd_service *svc);

/* Serve st (opened on the same loop) from now on, and scrub it in the
 * background when scrub_rate_bytes > 0 (a scrubber that cannot start is
 * logged and left off). Once only. */
void osd_service_attach(struct osd_service *svc, struct store *st);

/* Add the Osd service to srv (on the same loop). 0 or rpc_server_add_service's
 * error. */
int osd_service_register(struct osd_service *svc, struct rpc_server *srv);

/*
 * Begin shutdown: from now on every call is answered UNAVAILABLE ("osd
 * shutting down") at once; calls in flight finish and are answered; the
 * scrubber stops (its cursor saved). Then
 * done_cb(arg) runs on the loop (never from inside this call; may be NULL).
 * After that,
 * close the server (so no handler runs again), close the store, and free
 * the service. Once only.
 */
void osd_service_drain(struct osd_service *svc, void (*done_cb)(void *arg), void *arg);

/* Report sw's figures in Status (fields 60-64); NULL when it stops.
 * The service does not own it. */
struct osd_sweep;
void osd_service_set_sweep(struct osd_service *svc, struct osd_sweep *sw);
/* The recovery driver's figures, for Status (osd.proto fields 26-36). */
struct osd_service_recovery {
	uint64_t rate, bytes, stripes, errors, bytes_missing, unfound, scans;
	uint32_t pgs_primary, pgs_active, pgs_queued;
	uint64_t deep_interval_ms, deep_pgs, deep_stripes, deep_bytes, deep_repaired,
		deep_inconsistent;
	uint64_t deep_last_unix_ms;   /* the last PG deep scrub's end; 0: none since start */
};

/* Hooks to the OSD's recovery driver (osd/recover.h), which the service
 * does not know: bad_pg(arg, pg) runs when a shard of pg is found bad (a
 * new scrub record, or a GetShard whose stored bytes fail their crc);
 * status(arg, out) fills the recovery part of a Status answer. Either may
 * be NULL; h NULL clears them (do so before the driver is freed). */
struct osd_service_hooks {
	void (*bad_pg)(void *arg, uint32_t pg);
	void (*status)(void *arg, struct osd_service_recovery *out);
	/* A PutShard placed under map epoch `epoch` (nonzero): true, with the
	 * reason in why, when this OSD's map is newer and gives slot `shard`
	 * of `pg` to another OSD (PutShardRequest.map_epoch). NULL: never. */
	bool (*misplaced)(void *arg, uint32_t pg, uint32_t shard, uint64_t epoch, char *why,
			  size_t cap);
	void *arg;
};
void osd_service_set_hooks(struct osd_service *svc, const struct osd_service_hooks *h);

/* Calls being served now (taken contexts). */
uint32_t osd_service_inflight(const struct osd_service *svc);

/* Free svc. Requires: drained (done_cb ran), no server routing to it. */
void osd_service_free(struct osd_service *svc);

#endif
