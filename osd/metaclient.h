/*
 * metaclient.h — the OSD's link to the meta service: where registration
 * and heartbeats will live.
 *
 * Today (the meta service and its proto do not exist yet) this module only
 * keeps probing the meta addresses: it opens a TCP connection to one of
 * them on a timer, with exponential backoff while they are unreachable,
 * and logs every failure ("meta unreachable, retrying in Xs") and every
 * change back to reachable. The OSD keeps serving shards meanwhile: nothing
 * here blocks or gates the store or the RPC service.
 *
 * The seam: once common/proto/meta.proto exists, on_reachable() in
 * metaclient.c sends RegisterOsd {osd id, listen address, capacity} over an
 * rpc_channel and then a Heartbeat every heartbeat_ms (with space and
 * counters from the store), and learns the cluster map through the watch
 * RPC. Until then no message is sent and the OSD is not registered.
 *
 * Thread: the loop given to start; every function on that loop's thread.
 */
#ifndef OSD_METACLIENT_H
#define OSD_METACLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct osd_metaclient;

struct osd_metaclient_opts {
	const char *const *addrs;  /* "host:port" each (copied); tried in turn */
	size_t naddrs;             /* >= 1 */
	uint32_t osd_id;
	const char *listen_addr;   /* what registration will announce (copied) */
	uint32_t connect_timeout_ms; /* per attempt; 0: 2000 */
	uint32_t backoff_min_ms;   /* first retry delay; 0: 500 */
	uint32_t backoff_max_ms;   /* cap; 0: 30000 */
	uint32_t heartbeat_ms;     /* probe period while reachable; 0: 5000 */
};

/* Start probing at once. Returns 0 with *out, -EINVAL (no address, or an
 * address that is not host:port), or -ENOMEM. */
int osd_metaclient_start(uv_loop_t *loop, const struct osd_metaclient_opts *opts,
			 struct osd_metaclient **out);

/* Whether addr is a usable meta address ("host:port", "[v6]:port"). */
bool osd_metaclient_addr_valid(const char *addr);

/* Whether the last attempt reached a meta address. */
bool osd_metaclient_reachable(const struct osd_metaclient *mc);

/* Failed attempts in a row (0 once reachable). */
uint32_t osd_metaclient_failures(const struct osd_metaclient *mc);

/* Stop: cancel the attempt in flight, release handles; done_cb(arg) runs
 * on the loop once mc is freed (never from inside this call). */
void osd_metaclient_stop(struct osd_metaclient *mc, void (*done_cb)(void *arg), void *arg);

#endif
