/*
 * client.h — the library gateways, OSDs and iolake-admin use to talk to
 * the meta service: given the members' addresses, it finds the leader of
 * the Raft group a call addresses (the root, group 0, unless the request's
 * `group` field or meta_client_submit_group names another), follows
 * "not leader; leader=ADDR" redirects and the leader a follower names when
 * it forwarded a call (meta/node_fwd.c), and retries on leader change or
 * an unreachable member with backoff, without the caller noticing, until
 * the call's retry budget runs out. Each group's leader is remembered
 * apart. Members are declared unreachable within about a second (PING
 * after 300 ms busy, 1 s to answer); hints naming those are ignored.
 *
 * Exactly-once writes: every op submitted carries this client's random
 * client_id and a fresh increasing request_id, kept across retries, and
 * acked_below = the oldest request id still unanswered. A retry of an op
 * whose first attempt was applied but whose answer was lost is answered
 * from the state machine's request table, not applied again.
 *
 * Threads: a client belongs to the loop it was made on; callbacks run on
 * that loop, never from inside the call that started them.
 */
#ifndef META_CLIENT_H
#define META_CLIENT_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/proto/meta_methods.h"
#include "proto/meta.pb-c.h"

#define META_CLIENT_MAX_MEMBERS 16

struct meta_client_opts {
	const char *const *members;  /* "host:port" or "local:NAME", any member */
	size_t n_members;            /* 1..META_CLIENT_MAX_MEMBERS */
	uint32_t attempt_timeout_ms; /* one try; 0: 3000 (a WatchMap: its hold + 10 s) */
	uint32_t retry_for_ms;       /* whole call, retries included; 0: 30000 */
	uint32_t max_calls;          /* outstanding calls; 0: 4096 (beyond: -EAGAIN) */
	uint64_t client_id;          /* 0: random (nonzero) */
};

struct meta_client;

/* 0 and *out, -EINVAL (no members, too many), -ENOMEM. Loop thread. */
int meta_client_new(uv_loop_t *loop, const struct meta_client_opts *opts,
		    struct meta_client **out);

/* Every outstanding call's callback runs with IOL_ESHUTDOWN before this
 * returns; the client is freed (its handles a loop turn later). */
void meta_client_close(struct meta_client *c);

/* err: 0 and resp (valid during the callback only), or a negative error:
 *   IOL_ETIMEOUT      the retry budget ran out (no leader reachable)
 *   IOL_ESHUTDOWN     the client was closed
 *   -EINVAL           the member refused the request (INVALID_ARGUMENT)
 *   IOL_ENOT_FOUND    NOT_FOUND
 *   -EOPNOTSUPP       UNIMPLEMENTED (the member does not serve the method)
 *   -EIO              any other failure status (the text is logged) */
typedef void (*meta_client_cb)(void *ud, int err, const ProtobufCMessage *resp);

/* Call `method` (enum meta_method) on the leader with retries: of the
 * group req names in its `group` field (0 or none: the root). A group no
 * member hosts fails IOL_ENOT_FOUND once every member said so. req is
 * copied before this returns. 0, or -EAGAIN (max_calls outstanding),
 * -ENOMEM, -EINVAL (method out of range); cb does not run then. */
int meta_client_call(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
		     meta_client_cb cb, void *ud);

/* One op through Raft, exactly once. op is copied; its client_id,
 * request_id and acked_below are set by the client. err as above; on 0,
 * res is the op's result (res->status may still say NOT_FOUND, CONFLICT,
 * ...) and index the Raft entry that carried it. */
typedef void (*meta_client_submit_cb)(void *ud, int err, const Iolake__Meta__OpResult *res,
				      uint64_t index);
int meta_client_submit(struct meta_client *c, const Iolake__Meta__Op *op,
		       meta_client_submit_cb cb, void *ud);
/* The same through Raft group `group` (0: the root, as meta_client_submit,
 * but never routed by key range).
 * Submits of one loop turn coalesce per group. Request ids are the
 * client's across groups; each group's state keeps its own answers. */
int meta_client_submit_group(struct meta_client *c, uint64_t group, const Iolake__Meta__Op *op,
			     meta_client_submit_cb cb, void *ud);
/* As meta_client_submit_group, but op is not copied: the caller keeps it
 * alive and leaves it alone until cb has run, and the client writes its
 * client_id, request_id and acked_below into it. For a caller that keeps
 * its own copy of the op anyway (route.c's submits, which a retry on
 * another range sends again): one deep copy per submit less. */
int meta_client_submit_group_ref(struct meta_client *c, uint64_t group, Iolake__Meta__Op *op,
				 meta_client_submit_cb cb, void *ud);

/* As meta_client_call, but never routed by key range: the call goes to
 * the group its `group` field names even when it is an object call with
 * group 0 and range id 0 (which meta_client_call routes: the bucket's
 * range table is read from the root and cached, the call goes to the
 * key's range group, and a stale table is re-read and the call retried;
 * object and multipart submits through meta_client_submit likewise, and
 * a DeleteBucket seals the bucket's ranges first: meta/route.h). */
int meta_client_call_direct(struct meta_client *c, unsigned method, const ProtobufCMessage *req,
			    meta_client_cb cb, void *ud);

/* A deep copy of m (through its packed form); free with
 * protobuf_c_message_free_unpacked(copy, NULL). NULL: out of memory. */
ProtobufCMessage *meta_client_copy_msg(const ProtobufCMessage *m);

/* One attempt at one member, no redirect, no retry (cluster status asks
 * each member itself). err as above, IOL_EUNAVAILABLE when unreachable. */
int meta_client_call_member(struct meta_client *c, size_t member, unsigned method,
			    const ProtobufCMessage *req, meta_client_cb cb, void *ud);

/* Request ids (tracing): calls started from now on carry id (at most
 * LOG_REQ_ID_LEN chars kept; NULL or "" for none) as RPC call metadata
 * (rpc_call_opts.request_id), on every attempt; coalesced submits carry
 * the ids of their ops. Set it around the calls of one request and clear
 * it after. While a call's callback runs the client's id is that call's,
 * so calls made from a callback (route.c's retries, a caller's next step)
 * carry it without being told. */
void meta_client_set_trace(struct meta_client *c, const char *id);
const char *meta_client_trace(const struct meta_client *c);
/* The address a member names after "leader=" (a "not leader" redirect's
 * message, or the payload of an answer a follower forwarded: text from
 * the network) into out (NUL-terminated, cap bytes): its length, or -1
 * when none is named or it does not fit. Pure; fuzzed (fuzz_leader_hint). */
int meta_client_leader_addr(const char *msg, char *out, size_t cap);

size_t meta_client_member_count(const struct meta_client *c);
uv_loop_t *meta_client_loop(const struct meta_client *c);
const char *meta_client_member(const struct meta_client *c, size_t i);
uint64_t meta_client_id(const struct meta_client *c);
/* The last answer an attempt failed with ("STATUS from ADDR: message";
 * "" if none yet): what a tool prints when it gives up. */
const char *meta_client_last_error(const struct meta_client *c);

/* Counters for tests and benchmarks: attempts beyond the first, redirects
 * followed. */
struct meta_client_stats {
	uint64_t calls, retries, redirects;
	uint64_t batches;            /* SubmitRequests sent (submits coalesce) */
};
void meta_client_stats(const struct meta_client *c, struct meta_client_stats *out);

#endif
