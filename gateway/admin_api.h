/*
 * admin_api.h — the admin HTTP API: JSON over HTTP/1.1 on a port of its
 * own (not the S3 port), for operators, scripts and the web console.
 * Resources under /api/v1/ (docs/admin-api.md lists every one): cluster,
 * osds (+ out/in), pgs, buckets, users (+ create, delete), login/logout;
 * stats (this gateway's S3 request rate and latency per operation); the
 * console's static files under /console/ (console/dist, embedded at build
 * time: admin_api_console.c).
 *
 * Authentication: SigV4 with an admin user's access key (service "s3" or
 * "iolake-admin", the gateway's s3_auth with its own credential cache), or
 * a session token from POST /api/v1/login (HMAC-signed with a key made at
 * start, so tokens end with the process; in an HttpOnly cookie or as
 * "Authorization: Bearer"). No credentials: 401; a user who is not an
 * admin: 403. Errors are {"error": CODE, "message": TEXT}.
 *
 * Everything goes through meta's RPCs (meta/client.h), the ones
 * iolake-admin uses, and OSDs' Status for space; nothing of meta's logic
 * is here. Loop: one struct admin_api per loop; everything runs on it.
 */
#ifndef GATEWAY_ADMIN_API_H
#define GATEWAY_ADMIN_API_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct admin_api_cfg {
	const char *addr;               /* IP literal; NULL: 127.0.0.1 */
	int port;                       /* 0: any free port (admin_api_port) */
	const char *const *meta;        /* meta members (copied) */
	size_t n_meta;
	const char *region;             /* SigV4 scope region; NULL: any */
	uint32_t session_ttl_s;         /* login tokens; 0: 3600 */
	uint32_t max_conns;             /* 0: 64 */
	/* The S3 front end's request statistics in this process
	 * (s3_ops_stats; read on the API's loop, which must be theirs or
	 * tolerate relaxed reads): GET /api/v1/stats. NULL: 503 there. */
	struct gw_stats *stats;
	/* The shard GC worker of this process (s3_ops_gc; its loop must be
	 * the API's): GET /api/v1/gc's "worker". NULL: none here. */
	struct gw_gc *gc;
	/* The cluster map of the API's loop (s3_ops_map): a change of its
	 * creds_epoch (a key added or removed, a user's grants or admin flag
	 * changed) empties the credential cache before the next request, as
	 * on the S3 port. NULL: only this API's own deletions do, and other
	 * entries live their TTL (10 s; unknown keys 2 s). */
	struct gw_map *map;
};

struct admin_api;
struct gw_stats;
struct gw_gc;
struct gw_map;

/* Listen and serve. 0 and *out, -EINVAL (no meta), -ENOMEM, -errno of
 * the bind (-EADDRINUSE). */
int admin_api_start(uv_loop_t *loop, const struct admin_api_cfg *cfg, struct admin_api **out);

int admin_api_port(const struct admin_api *a);

/* Stop: connections closed, meta and OSD calls cancelled; cb(arg) once
 * everything is freed. */
void admin_api_close(struct admin_api *a, void (*cb)(void *arg), void *arg);

#endif
