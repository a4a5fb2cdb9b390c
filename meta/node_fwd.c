/*
 * node_fwd.c — followers forward: a Submit or a linearizable read that
 * reaches a member which does not lead the group it addresses is passed
 * to the leader this member knows, and the leader's answer is relayed,
 * so a client that reaches any member gets its answer in one call.
 *
 * Owns the forwarded calls in flight and their bound: at most
 * NODE_FWD_MAX_BYTES of request bytes and NODE_FWD_MAX_CALLS calls per
 * member; beyond, and whenever no leader is known, the caller answers
 * the old redirect ("not leader; leader=ADDR"), which meta/client.c
 * follows. One hop at most: the forwarded request carries `forwarded`
 * (field 20 of SubmitRequest and of the read requests), and a member that
 * gets a forwarded request it cannot serve redirects (two members that
 * each believe the other leads, in an election, cannot bounce a call).
 * A leader that cannot be reached answers the redirect too (the client's
 * circuit then moves it on). Exactly-once: a forwarded Submit is the
 * client's request, ids included; a retry of it is deduplicated as any.
 *
 * The relayed answer carries, as its RPC payload (these responses have
 * none of their own), the text "leader=HOST:PORT": meta/client.c sends
 * its next calls of that group straight to the leader, so a client that
 * started at a follower pays the extra hop once, not on every call.
 *
 * Does not own the peer channels (node_read.c) nor decide who leads
 * (libraft). Loop: the member's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "meta/node_internal.h"

#define NODE_FWD_MAX_BYTES (8u << 20)   /* request bytes forwarded and unanswered */
#define NODE_FWD_MAX_CALLS 4096
#define NODE_FWD_MIN_LEFT_MS 50         /* a call with less time left is redirected */
#define NODE_FWD_TIMEOUT_MS 10000       /* a call without a deadline */
#define FWD_FIELD 20                    /* `forwarded` in the request messages */

struct fwd {
	struct meta_node *n;
	struct rpc_req *r;
	uint64_t group;
	size_t bytes;
	char leader[META_NODE_ADDR_MAX];   /* RPC address forwarded to */
};

static uint32_t *fwd_field(const ProtobufCMessage *m)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(m->descriptor, FWD_FIELD);
	if (!f || f->type != PROTOBUF_C_TYPE_UINT32 || f->label == PROTOBUF_C_LABEL_REPEATED ||
	    strcmp(f->name, "forwarded") != 0)
		return NULL;
	return (uint32_t *)((char *)m + f->offset);
}

bool node_req_forwarded(const struct rpc_req *r)
{
	const uint32_t *v = fwd_field(rpc_req_msg(r));
	return v && *v;
}

static void on_forwarded(void *ud, const struct rpc_result *res)
{
	struct fwd *f = ud;
	struct meta_node *n = f->n;
	n->fwd_calls--;
	n->fwd_bytes -= f->bytes;
	metrics_gauge_set(n->m_fwd_bytes, (int64_t)n->fwd_bytes);
	if (res->status == RPC_OK) {
		char hint[META_NODE_ADDR_MAX + 8];
		int len = snprintf(hint, sizeof(hint), "leader=%s", f->leader);
		struct buf *b = len > 0 ? buf_copy(hint, (size_t)len) : NULL;
		struct buf_slice pl = { b, 0, b ? (size_t)len : 0 };
		rpc_respond(f->r, res->resp, b ? &pl : NULL);
		buf_unref(b);
	} else if (res->status == RPC_UNAVAILABLE || res->status == RPC_DEADLINE_EXCEEDED ||
		   res->status == RPC_CANCELLED) {
		/* The leader did not answer: say whom this member believes
		 * leads (the client knows that member's circuit). */
		struct meta_group *g = n->closing ? NULL : hosting_find(n, f->group);
		if (g)
			group_fail_not_leader(g, f->r);
		else
			rpc_fail(f->r, RPC_UNAVAILABLE, "member closing");
	} else {
		rpc_fail(f->r, res->status, "%s", res->message);
	}
	free(f);
}

int node_forward(struct meta_group *g, struct rpc_req *r, unsigned method)
{
	struct meta_node *n = g->n;
	const ProtobufCMessage *m = rpc_req_msg(r);
	const uint32_t *mark = fwd_field(m);
	if (!mark)
		return -EOPNOTSUPP;
	if (*mark)
		return -ELOOP;
	if (g->closing || n->closing)
		return -ESHUTDOWN;
	raft_id lid = 0;
	const char *laddr = NULL;
	raft_leader(&g->raft, &lid, &laddr);
	if (!lid || !laddr || lid == n->o.id)
		return -ENOENT;
	size_t bytes = protobuf_c_message_get_packed_size(m);
	if (n->fwd_calls >= NODE_FWD_MAX_CALLS || n->fwd_bytes + bytes > NODE_FWD_MAX_BYTES) {
		metrics_counter_inc(n->m_fwd_refused);
		return -EAGAIN;
	}
	uint64_t now = loop_now_ms(), dl = rpc_req_deadline_ms(r);
	uint64_t left = dl ? (dl > now ? dl - now : 0) : NODE_FWD_TIMEOUT_MS;
	if (left < NODE_FWD_MIN_LEFT_MS)
		return -ETIMEDOUT;
	struct rpc_channel *ch = node_peer_channel(n, lid, laddr);
	if (!ch || rpc_channel_peer_state(ch) != RPC_PEER_UP)
		return -EHOSTUNREACH;   /* known unreachable, or being probed */
	/* The mark goes on a shallow copy of the message (its strings and
	 * submessages shared, read only), packed by rpc_call before it
	 * returns: the request may be the caller's own memory (rpc_call_ref
	 * in process: HeadObject, GetVersion), which a handler must not
	 * write, and another member may be reading it meanwhile. */
	size_t msz = m->descriptor->sizeof_message;
	struct fwd *f = malloc(sizeof(*f));
	ProtobufCMessage *cp = malloc(msz);
	if (!f || !cp) {
		free(f);
		free(cp);
		return -ENOMEM;
	}
	*f = (struct fwd){ .n = n, .r = r, .group = g->id, .bytes = bytes };
	if (meta_node_rpc_addr(laddr, f->leader))
		f->leader[0] = 0;
	n->fwd_calls++;
	n->fwd_bytes += bytes;
	n->fwd_total++;
	metrics_counter_inc(n->m_fwd);
	metrics_gauge_set(n->m_fwd_bytes, (int64_t)n->fwd_bytes);
	/* Leave the leader a moment to answer before the caller's deadline. */
	struct rpc_call_opts co = { .timeout_ms = (uint32_t)(left > NODE_FWD_TIMEOUT_MS
							     ? NODE_FWD_TIMEOUT_MS
							     : left - NODE_FWD_MIN_LEFT_MS / 2),
				    .request_id = rpc_req_id(r) };
	memcpy(cp, m, msz);
	*fwd_field(cp) = 1;
	rpc_call(ch, META_SERVICE, method, cp, NULL, &co, on_forwarded, f);
	free(cp);
	return 0;
}
