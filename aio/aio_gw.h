/*
 * aio_gw.h — iolake-aio's gateway: the S3 gateway on --gw-loops loop
 * threads (gateway/gw_loops.h) against the in-process meta member and
 * OSDs, and the admin API with the console on loop 0. Split out of
 * aio/main.c (issue 19).
 *
 * Owns the gateway's loops and the admin API of an aio. Not the meta
 * member, the OSDs, signals or aio.json (aio/main.c).
 *
 * Thread: start and stop from aio's main thread (they block).
 */
#ifndef AIO_AIO_GW_H
#define AIO_AIO_GW_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_front.h"
#include "gateway/gw_loops.h"

struct admin_api;
struct native_loops;
struct workpool;
struct metrics_registry;

struct aio_gw_cfg {
	unsigned loops;                /* 1..GW_LOOPS_MAX */
	const char *meta;              /* what the gateway dials for meta */
	const char *listen;            /* --s3-listen as given (the lifecycle holder's name) */
	const char *region;
	unsigned k, m;
	uint32_t inline_max;
	uint64_t debug_min_part;
	struct metrics_registry *reg;
	uint32_t gc_interval_ms, lc_interval_ms;
	uint64_t lc_day_ms;
	bool no_sigv2;
	const struct gw_front *front;
	bool (*ready)(void *ops);      /* /health/ready */
	const char *s3_host;
	int s3_port;                   /* 0: any */
	const char *api_host;
	int api_port;                  /* 0: any */
	bool api_default;              /* a default port: falls back to any when taken */
	struct workpool *hash_pool;    /* large bodies' hashing (common/workpool.h); NULL: on the loops */
	uint32_t segment_bytes;        /* --segment-size; 0: s3_ops' default */
	uint64_t pool_max_bytes;       /* idle buffers kept over all loops (--buffer-pool-max; a
	                                * flag of 0 comes as 1: keep none); 0: the default */
	bool native_off;               /* no native protocol listener (issue 19) */
	const char *native_host;
	int native_port;               /* 0: any */
	bool native_default;           /* a default port: falls back to any when taken */
};

struct aio_gw {
	struct gw_loops *loops;
	struct admin_api *api;
	struct native_loops *native;   /* on every loop; NULL: off */
	int s3_port, api_port, native_port;   /* bound */
};

/* Start the loops, then the admin API on loop 0. 0; or -errno with
 * *which "s3" (the S3 address) or "api" (the admin API's) or NULL (no
 * address at fault) or "native"; nothing is left running. The native
 * protocol, unless native_off, is served on every loop with each loop's
 * ops (gateway/native_loops.h). */
int aio_gw_start(const struct aio_gw_cfg *c, struct aio_gw *g, const char **which);

/* Close the admin API, then every loop (gw_loops_stop). */
void aio_gw_stop(struct aio_gw *g);

#endif
