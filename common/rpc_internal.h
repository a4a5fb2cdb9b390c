/*
 * rpc_internal.h — what the RPC core (rpc.c), the gRPC wire codec
 * (rpc_wire.c) and the two transports (rpc_h2.c, rpc_local.c) share.
 * Nothing outside common/rpc*.c includes this.
 *
 * Shape: struct rpc_channel and struct rpc_server are the common parts; a
 * transport embeds struct rpc_channel first in its own channel struct and
 * plugs in through struct rpc_chan_ops. A server carries the state of both
 * transports (it may listen on TCP and on a local name at once). An
 * incoming call is a struct rpc_req embedded in the transport's request
 * struct, answered through struct rpc_req_ops.
 *
 * Lifetimes: channels and servers are refcounted on their own loop (plain
 * ints, loop thread only): one reference for "open", one per handle or
 * object still pointing at them. The last unref frees.
 */
#ifndef COMMON_RPC_INTERNAL_H
#define COMMON_RPC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rpc.h"

#define RPC_DEFAULT_MAX_MESSAGE (256u << 20)
#define RPC_MAX_MESSAGE_TEXT 512 /* grpc-message bytes kept, before encoding */
#define RPC_MAX_REQUEST_ID 128   /* x-request-id bytes kept */

/* ------------------------------------------------------------ targets */

enum rpc_target_kind { RPC_TARGET_TCP, RPC_TARGET_LOCAL };

struct rpc_target {
	enum rpc_target_kind kind;
	char host[256];  /* TCP: numeric IPv4/IPv6 or "localhost" */
	uint16_t port;   /* TCP */
	const char *name; /* LOCAL: points into the parsed string */
};

/* Parse "host:port", "[v6]:port" or "local:NAME". 0 or -EINVAL. */
int rpc_target_parse(const char *s, struct rpc_target *t);

/* Resolve a parsed TCP target into a sockaddr (numeric only: no DNS on a
 * loop). 0 or -EINVAL. */
int rpc_target_sockaddr(const struct rpc_target *t, struct sockaddr_storage *ss);

/* ------------------------------------------------------------ wire codec */

#define GRPC_PREFIX_BYTES 5

/* Incremental reader of a stream of gRPC length-prefixed messages. Pure:
 * bytes in, whole messages (each in a buf sized from its prefix) out. */
struct grpc_parser {
	uint8_t hdr[GRPC_PREFIX_BYTES];
	uint8_t hdr_len;        /* prefix bytes seen of the current message */
	struct buf *cur;        /* message being filled, or NULL */
	uint32_t max_bytes;     /* larger messages: -EMSGSIZE */
	uint8_t max_msgs;       /* more messages than this: -EPROTO */
	uint8_t nmsgs;          /* complete messages in msgs[] */
	struct buf *msgs[2];    /* [0] the protobuf message, [1] the payload */
};

void grpc_parser_init(struct grpc_parser *p, uint32_t max_bytes, unsigned max_msgs);
/* Drop every buffer held. */
void grpc_parser_reset(struct grpc_parser *p);
/* Consume len bytes. 0, -EMSGSIZE (a message over max_bytes), -EPROTO
 * (compressed flag set, or too many messages), -ENOMEM. After an error the
 * parser must not be fed again. */
int grpc_parser_feed(struct grpc_parser *p, const uint8_t *data, size_t len);
/* True when no message is partly received (a stream may end here). */
bool grpc_parser_at_boundary(const struct grpc_parser *p);

static inline void grpc_prefix_put(uint8_t out[GRPC_PREFIX_BYTES], uint32_t len)
{
	out[0] = 0;
	out[1] = (uint8_t)(len >> 24);
	out[2] = (uint8_t)(len >> 16);
	out[3] = (uint8_t)(len >> 8);
	out[4] = (uint8_t)len;
}

/* grpc-timeout: "<1-8 digits><H|M|S|m|u|n>". 0 (ms rounded up) or -EINVAL. */
int grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *ms);
/* Format ms as a grpc-timeout value into out (at least 16 bytes). */
size_t grpc_timeout_format(char *out, uint32_t ms);
/* Percent-encode a grpc-message; out needs 3 * strlen(in) + 1 bytes.
 * Returns the encoded length. */
size_t grpc_message_encode(const char *in, char *out);
/* Decode into out (cap bytes, NUL-terminated, truncated to fit). Invalid
 * escapes are kept verbatim, as the gRPC spec asks. */
size_t grpc_message_decode(const uint8_t *in, size_t len, char *out, size_t cap);

/* ------------------------------------------------------------ deadlines */

/* A deadline heap node embedded in a client call. */
struct rpc_dl {
	uint64_t at_ms;   /* loop_now_ms() clock; 0: not in the heap */
	uint32_t idx;
	void (*fire)(struct rpc_dl *d);
};

/* ------------------------------------------------------------ client */

struct rpc_call_args {
	const ProtobufCServiceDescriptor *svc;
	unsigned method;
	struct buf *req;           /* prefix (5 bytes) + packed message; owned;
				    * NULL when msg is set */
	const ProtobufCMessage *msg; /* rpc_call_ref on a local channel: req by reference */
	struct buf *hold;          /* with msg: a reference held on its holder */
	struct buf_slice payload;  /* a reference held; .buf NULL for none */
	uint32_t timeout_ms;
	const char *request_id;    /* "" for none */
	rpc_call_cb cb;
	void *ud;
};

struct rpc_chan_ops {
	/* Take over a->req (or a->msg with a->hold's reference: only the
	 * local transport gets those, see rpc_call_ref) and a->payload's
	 * reference; complete through rpc_chan_complete() or
	 * rpc_chan_defer_fail(). */
	void (*call)(struct rpc_channel *ch, struct rpc_call_args *a);
	/* Fail every pending call with CANCELLED now; start closing the
	 * transport's handles (each holding a channel reference). */
	void (*close)(struct rpc_channel *ch);
	/* Free the transport's part; last unref, everything closed. */
	void (*free)(struct rpc_channel *ch);
};

struct rpc_deferred;
struct rpc_peer;
struct rpc_fault_call;

struct rpc_channel {
	const struct rpc_chan_ops *ops;
	uv_loop_t *loop;
	char *target_str;
	struct rpc_target target;
	struct rpc_channel_opts opts;  /* defaults filled in */
	struct rpc_peer *peer;         /* TCP: the shared circuit; NULL: none */
	uint32_t npending;             /* calls accepted, not yet completed */
	int refs;
	bool closing;
	/* Completions that must not run inside rpc_call(). */
	uv_timer_t defer_timer;
	struct rpc_deferred *dhead, *dtail;
	/* Deadlines of pending calls: a binary min-heap and one timer. */
	uv_timer_t dl_timer;
	struct rpc_dl **dl_heap;
	uint32_t dl_len, dl_cap;
	uint64_t dl_armed_ms;          /* when dl_timer fires, 0: stopped */
	/* Fault injection (rpc_fault.c, tests only): the transport's own ops
	 * when ops is the fault layer's, else NULL; calls and answers held. */
	const struct rpc_chan_ops *fault_inner;
	struct rpc_fault_call *fault_held;
};

/* Common part of a transport's channel: fills ch, inits its handles. */
int rpc_chan_init(struct rpc_channel *ch, const struct rpc_chan_ops *ops, uv_loop_t *loop,
		  const char *target, const struct rpc_target *t,
		  const struct rpc_channel_opts *opts);
void rpc_chan_unref(struct rpc_channel *ch);

/* Run cb with status/message on a later loop turn (not counted pending). */
void rpc_chan_defer_fail(struct rpc_channel *ch, rpc_call_cb cb, void *ud, int status,
			 const char *message);

/* Report the end of a pending call: npending--, then cb(ud, res). */
void rpc_chan_complete(struct rpc_channel *ch, rpc_call_cb cb, void *ud,
		       const struct rpc_result *res);

/* Unpack and deliver a response: status OK with msg/payload bytes, or a
 * failure. Bounded by opts.max_message_bytes. Runs cb via
 * rpc_chan_complete. msg may be NULL (an empty message). */
void rpc_chan_deliver(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
		      rpc_call_cb cb, void *ud, int status, const char *message,
		      const uint8_t *msg, size_t msg_len, const struct buf_slice *payload);
/* The same, unpacking with alloc (NULL: the default) and telling cb
 * whether the payload stayed in memory (struct rpc_result.in_memory). */
void rpc_chan_deliver_ex(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
			 rpc_call_cb cb, void *ud, int status, const char *message,
			 const uint8_t *msg, size_t msg_len, const struct buf_slice *payload,
			 ProtobufCAllocator *alloc, bool in_memory);

/* Deliver an answer given in process (rpc_respond_give): cb gets msg
 * itself as an OK answer and may take it (rpc_answer_take); what it does
 * not take is freed after cb returns. A msg that is not of type out is
 * freed and delivered as RPC_INTERNAL. No max_message_bytes bound:
 * nothing is copied or allocated for it. */
void rpc_chan_deliver_given(struct rpc_channel *ch, const ProtobufCMessageDescriptor *out,
			    rpc_call_cb cb, void *ud, ProtobufCMessage *msg,
			    const struct buf_slice *payload);

/* Deadline heap of the channel. */
int rpc_dl_add(struct rpc_channel *ch, struct rpc_dl *d, uint32_t timeout_ms,
	       void (*fire)(struct rpc_dl *d));
void rpc_dl_del(struct rpc_channel *ch, struct rpc_dl *d);

/* Transports. */
struct rpc_channel *rpc_h2_channel_open(uv_loop_t *loop, const char *target,
					const struct rpc_target *t,
					const struct rpc_channel_opts *opts);
struct rpc_channel *rpc_local_channel_open(uv_loop_t *loop, const char *target,
					   const struct rpc_target *t,
					   const struct rpc_channel_opts *opts);

/* Fault injection (rpc_fault.c): true while rules are set; then
 * rpc_channel_open hands each new channel to rpc_fault_wrap, which puts
 * the fault layer's ops in front of the transport's. */
extern _Atomic bool rpc_fault_armed;
void rpc_fault_wrap(struct rpc_channel *ch);

/* ------------------------------------------------------------ peer health
 * (rpc_health.c; the contract of the states is in rpc.h) */

struct rpc_health_opts {
	uint32_t ping_busy_ms, ping_idle_ms, ping_timeout_ms;
	uint32_t user_timeout_ms;          /* TCP_USER_TIMEOUT */
	uint32_t keepalive_idle_s, keepalive_intvl_s, keepalive_cnt;
};

/* Defaults, with the IOLAKE_RPC_* environment overrides applied. */
void rpc_health_defaults(struct rpc_health_opts *o);

/* The circuit of target, created UP on first use; NULL when the table is
 * full (no circuit: calls go out as if UP). Never freed. */
struct rpc_peer *rpc_peer_get(const char *target);
int rpc_peer_load(const struct rpc_peer *p);
uint64_t rpc_peer_retry_at(const struct rpc_peer *p);
/* A connection to p failed (declared_dead: its PING went unanswered):
 * open the circuit, retry after the next backoff of o. */
void rpc_peer_failed(struct rpc_peer *p, const struct rpc_channel_opts *o, bool declared_dead);
/* True when the caller should probe now (p DOWN, past retry_at): p is
 * PROBING until rpc_peer_ok, rpc_peer_failed or rpc_peer_probe_abandon. */
bool rpc_peer_probe_begin(struct rpc_peer *p);
void rpc_peer_probe_abandon(struct rpc_peer *p);
/* A PING was answered: close the circuit. */
void rpc_peer_ok(struct rpc_peer *p);

void rpc_health_count_ping(void);
void rpc_health_count_ack(uint64_t rtt_us);
void rpc_health_count_fast_fail(void);

/* ------------------------------------------------------------ server */

/* One routable method, built once by rpc_server_add_service. */
struct rpc_method {
	char *path;                /* "/pkg.Svc/Method", owned */
	uint32_t path_len;
	uint32_t hash;
	const ProtobufCServiceDescriptor *svc;
	unsigned index;
	rpc_handler_fn fn;         /* NULL: UNIMPLEMENTED */
	rpc_direct_fn direct;      /* in process, on the caller's thread; NULL: none */
	void *ud;
};

struct rpc_h2_server;
struct rpc_local_server;

struct rpc_server {
	uv_loop_t *loop;
	struct rpc_server_opts opts;
	/* Open addressing over methods; slot holds index + 1, 0 = empty. */
	struct rpc_method *methods;
	uint32_t nmethods;
	uint32_t *slots;
	uint32_t slot_mask;
	int refs;        /* open + live requests + transport handles */
	bool closing;
	atomic_uint tcp_conns;  /* TCP connections open (rpc_server_conns, any thread) */
	struct rpc_h2_server *h2;
	struct rpc_local_server *local;
};

void rpc_server_ref(struct rpc_server *srv);
void rpc_server_unref(struct rpc_server *srv);

/* Find by path bytes (no NUL needed), or by descriptor + index. */
const struct rpc_method *rpc_server_find_path(const struct rpc_server *srv, const uint8_t *path,
					      size_t len);
const struct rpc_method *rpc_server_find(const struct rpc_server *srv,
					 const ProtobufCServiceDescriptor *svc, unsigned index);

struct rpc_req_ops {
	/* Send the answer (status OK: resp is prefix + packed message, owned;
	 * payload referenced by the callee if kept) or drop it when the caller
	 * has gone, then release r (including rpc_req_release). */
	void (*answer)(struct rpc_req *r, int status, const char *message, struct buf *resp,
		       const struct buf_slice *payload);
	bool (*gone)(const struct rpc_req *r);
	/* Optional: answer OK with the message itself, not packed (the
	 * transport packs it where it likes, before returning); otherwise
	 * as answer. NULL: rpc_respond packs and calls answer. */
	void (*answer_msg)(struct rpc_req *r, const ProtobufCMessage *resp,
			   const struct buf_slice *payload);
	/* Optional: answer OK with resp given (rpc_respond_give: heap
	 * memory of the default allocator, the transport's from now on)
	 * when the caller has not gone. NULL: rpc_respond_give answers as
	 * rpc_respond does, then frees resp. */
	void (*answer_give)(struct rpc_req *r, ProtobufCMessage *resp,
			    const struct buf_slice *payload);
	/* Optional: r's connection's data slot (rpc_req_conn_data), NULL
	 * once the connection is gone. NULL: the transport has none. */
	void **(*conn_data)(struct rpc_req *r);
};

struct rpc_req {
	const struct rpc_req_ops *ops;
	struct rpc_server *srv;
	const struct rpc_method *m;  /* NULL: unknown path */
	ProtobufCMessage *msg;       /* unpacked by rpc_req_dispatch, or the caller's */
	struct buf *msg_hold;        /* msg is the caller's (rpc_call_ref): a reference */
	bool in_memory;              /* payload is the caller's buffer (rpc_req_payload_in_memory) */
	struct buf_slice payload;    /* our reference */
	const char *id;              /* never NULL */
	uint64_t deadline_ms;
	uint64_t t0_ns;              /* dispatched (server opts.log_calls only) */
	const struct rpc_ident *ident; /* the TLS peer (common/rpc_authz.h); NULL: none */
	uint32_t admit_slot;         /* rpc_req_admit_slot; set by the transport */
};

/* Unpack msg bytes for r->m and run the handler, or answer UNIMPLEMENTED
 * / INVALID_ARGUMENT. r->payload is already set (reference taken). */
void rpc_req_dispatch(struct rpc_req *r, const uint8_t *msg, size_t len);
/* Run the handler on r->msg, already set (by reference, r->msg_hold). */
void rpc_req_dispatch_msg(struct rpc_req *r);
/* Free what rpc_req_dispatch and the payload hold. */
void rpc_req_release(struct rpc_req *r);

/* Pack m after a 5-byte gRPC prefix into one new buf (len = 5 + size). */
struct buf *rpc_pack(const ProtobufCMessage *m);

int rpc_h2_listen(struct rpc_server *srv, const struct rpc_target *t);
int rpc_h2_adopt(struct rpc_server *srv, int fd);
int rpc_h2_port(const struct rpc_server *srv);
void rpc_h2_server_close(struct rpc_server *srv);
int rpc_local_listen(struct rpc_server *srv, const char *name);
void rpc_local_server_close(struct rpc_server *srv);

#endif
