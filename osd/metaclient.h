/*
 * metaclient.h — the OSD's link to the meta service: registration and
 * heartbeats.
 *
 * It probes the meta addresses (a TCP connect on a timer, exponential
 * backoff while they are unreachable, a log line on every failure and on
 * every change back to reachable). Each time a probe reaches meta, it
 * registers the OSD (RegisterOsd {id, listen address, host, capacity,
 * up, in}) through the meta client library (meta/client.h: leader
 * redirects, exactly-once submits) until meta has acked it, and from then
 * on sends a Heartbeat every heartbeat_ms; a Heartbeat answered NOT_FOUND
 * (meta forgot the OSD) registers again. The OSD keeps serving shards
 * meanwhile: nothing here blocks or gates the store or the RPC service.
 *
 * An in-process meta ("local:NAME", iolake-aio runs one metaclient per
 * OSD against its meta member) has no TCP to probe: it counts as
 * reachable at every period, and the meta client's own retries cover a
 * member not up yet.
 *
 * Does not: learn the cluster map (the recovery driver, osd/recover.h,
 * watches it), report space in
 * heartbeats (HeartbeatRequest has no field for it yet).
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
	const char *const *addrs;  /* "host:port" or "local:NAME" each (copied); tried in turn */
	size_t naddrs;             /* >= 1 */
	uint32_t osd_id;
	const char *listen_addr;   /* announced RPC address, host:port (copied) */
	const char *host;          /* failure domain announced; NULL: gethostname() */
	uint64_t capacity_bytes;   /* announced capacity */
	uint32_t connect_timeout_ms; /* per attempt; 0: 2000 */
	uint32_t backoff_min_ms;   /* first retry delay; 0: 500 */
	uint32_t backoff_max_ms;   /* cap; 0: heartbeat_ms */
	uint32_t heartbeat_ms;     /* probe + Heartbeat period while reachable; 0: 2000 */
	/* Called on the loop each time meta acks a registration (the first,
	 * and again after a Heartbeat answered NOT_FOUND); NULL: none. */
	void (*on_registered)(void *arg, uint32_t osd_id);
	void *arg;
};

/* Start probing at once. Returns 0 with *out, -EINVAL (no address, or an
 * address that is neither host:port nor local:NAME), or -ENOMEM. */
int osd_metaclient_start(uv_loop_t *loop, const struct osd_metaclient_opts *opts,
			 struct osd_metaclient **out);

/* Whether addr is a usable meta address for iolake-osd ("host:port",
 * "[v6]:port"; "local:NAME" is not: there is no meta in its process). */
bool osd_metaclient_addr_valid(const char *addr);

/* Whether the last attempt reached a meta address. */
bool osd_metaclient_reachable(const struct osd_metaclient *mc);

/* Whether meta has acked this OSD's registration (and no Heartbeat has
 * been answered NOT_FOUND since). */
bool osd_metaclient_registered(const struct osd_metaclient *mc);

/* Heartbeats meta has answered OK. */
uint64_t osd_metaclient_beats(const struct osd_metaclient *mc);

/* Failed attempts in a row (0 once reachable). */
uint32_t osd_metaclient_failures(const struct osd_metaclient *mc);

/* Stop: cancel the attempt in flight, release handles; done_cb(arg) runs
 * on the loop once mc is freed (never from inside this call). */
void osd_metaclient_stop(struct osd_metaclient *mc, void (*done_cb)(void *arg), void *arg);

#endif
