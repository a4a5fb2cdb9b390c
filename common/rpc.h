/*
 * rpc.h — calls between IOLake services: protobuf-c messages with an
 * optional raw payload, over one of two transports behind one API.
 *
 *   "host:port"   HTTP/2 cleartext (nghttp2) with gRPC framing: path
 *                 "/<package.Service>/<Method>", content-type
 *                 application/grpc, 5-byte length prefix per message,
 *                 grpc-status / grpc-message trailers, grpc-timeout.
 *                 One multiplexed connection per channel, reused by every
 *                 call; PINGs detect a dead or hung peer, whose circuit
 *                 (shared per peer) then fails calls at once while it is
 *                 probed with exponential backoff (see "peer health").
 *   "local:NAME"  in-process: the same messages and handlers, no sockets,
 *                 no framing. The call crosses threads through the server
 *                 loop's queue; payloads move by reference, not by copy.
 *                 A request made with rpc_call_ref() is read by the
 *                 handler where the caller built it (no pack, no unpack);
 *                 the answer is packed into the call's own storage and
 *                 unpacked into an arena of it (no heap allocation for
 *                 messages that fit, see rpc_local.c).
 *
 * A call is one request message (+ optional payload) and one response
 * message (+ optional payload). On the wire the payload is a second gRPC
 * length-prefixed message of raw bytes after the protobuf one, so shard
 * bytes never pass through protobuf packing and are written from the
 * caller's buffer straight into DATA frames.
 *
 * Services are protoc-c service descriptors; a method is its index in
 * descriptor->methods. Routing uses descriptor->name ("iolake.osd.Osd")
 * and the method's name.
 *
 * Threads: a channel and everything done with it belong to the loop it was
 * opened on; a server and its handlers run on the server's loop. The two
 * may be different threads (the in-process transport hands calls across).
 */
#ifndef COMMON_RPC_H
#define COMMON_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"

/* gRPC status codes; these travel in grpc-status. */
#define RPC_STATUSES(X)              \
	X(OK, 0)                     \
	X(CANCELLED, 1)              \
	X(UNKNOWN, 2)                \
	X(INVALID_ARGUMENT, 3)       \
	X(DEADLINE_EXCEEDED, 4)      \
	X(NOT_FOUND, 5)              \
	X(ALREADY_EXISTS, 6)         \
	X(PERMISSION_DENIED, 7)      \
	X(RESOURCE_EXHAUSTED, 8)     \
	X(FAILED_PRECONDITION, 9)    \
	X(ABORTED, 10)               \
	X(OUT_OF_RANGE, 11)          \
	X(UNIMPLEMENTED, 12)         \
	X(INTERNAL, 13)              \
	X(UNAVAILABLE, 14)           \
	X(DATA_LOSS, 15)             \
	X(UNAUTHENTICATED, 16)

enum rpc_status {
#define RPC_STATUS_ENUM(name, code) RPC_##name = code,
	RPC_STATUSES(RPC_STATUS_ENUM)
#undef RPC_STATUS_ENUM
};

/* "DEADLINE_EXCEEDED" etc.; "UNKNOWN" for codes outside the table. */
const char *rpc_status_name(int status);

/* ------------------------------------------------------------ client */

struct rpc_channel;

struct rpc_channel_opts {
	uint32_t connect_timeout_ms;   /* 0: 3000 */
	uint32_t backoff_min_ms;       /* 0: 50; doubles per failure, jittered */
	uint32_t backoff_max_ms;       /* 0: 2000 (a healed peer is probed at least this often) */
	uint32_t max_message_bytes;    /* 0: 256 MiB; larger responses fail RESOURCE_EXHAUSTED */
	uint32_t max_pending_calls;    /* 0: 65536; beyond it calls fail RESOURCE_EXHAUSTED */
	/* Failure detection (TCP only; see "Peer health" below). 0: the
	 * default, from the environment variable named when set. */
	uint32_t ping_busy_ms;         /* calls out, nothing heard: PING; 1000 (IOLAKE_RPC_PING_BUSY_MS) */
	uint32_t ping_idle_ms;         /* idle connection: PING; 10000 (IOLAKE_RPC_PING_IDLE_MS) */
	uint32_t ping_timeout_ms;      /* unanswered PING: dead; 2000 (IOLAKE_RPC_PING_TIMEOUT_MS) */
	/* Mutual TLS under HTTP/2 (common/rpc_tls.h); NULL: the process
	 * default (rpc_tls_default(), none unless --rpc-tls-* set it). */
	struct rpc_tls *tls;
};

/* Open a channel to target ("host:port" or "local:NAME") on loop. Does not
 * connect yet: the first call does. opts may be NULL. Returns NULL only on
 * out-of-memory or an unparsable target. */
struct rpc_channel *rpc_channel_open(uv_loop_t *loop, const char *target,
				     const struct rpc_channel_opts *opts);

/* Fail every pending call with RPC_CANCELLED (their callbacks run before
 * this returns), close the connection and free the channel once libuv has
 * released its handles. The channel must not be used afterwards. */
void rpc_channel_close(struct rpc_channel *ch);

/* The target the channel was opened with. */
const char *rpc_channel_target(const struct rpc_channel *ch);

/* What a call's callback receives. Everything here is valid only during
 * the callback; take a buf_ref() on payload.buf to keep the bytes. */
struct rpc_result {
	int status;                   /* enum rpc_status */
	const char *message;          /* grpc-message or a local reason; never NULL */
	const ProtobufCMessage *resp; /* unpacked response; NULL unless RPC_OK */
	struct buf_slice payload;     /* response payload; .buf NULL when none */
	/* The payload never left this process's memory: it is the server's
	 * own buffer, handed by reference (the in-process transport). A crc
	 * the server computed or verified over those bytes holds for them as
	 * they are here; nothing in transit could have changed them. False
	 * over HTTP/2, where the bytes were copied off a socket. */
	bool in_memory;
};

typedef void (*rpc_call_cb)(void *ud, const struct rpc_result *res);

struct rpc_call_opts {
	uint32_t timeout_ms;          /* 0: no deadline (avoid: use one) */
	/* Tracing: the request id this call is made for (e.g. the S3
	 * request's), readable by the handler as rpc_req_id(); NULL or "" for
	 * none (nothing is sent). At most 128 bytes are kept; copied. */
	const char *request_id;
};

/* Call method number `method` of service svc with req and an optional
 * payload (NULL or .buf NULL for none).
 *
 * The request is packed before this returns, so req may be freed at once;
 * the transport takes its own reference on payload->buf. cb runs exactly
 * once, on the channel's loop, and never from inside rpc_call() itself,
 * whatever the outcome (a bad method or a full queue are reported through
 * cb too). Failures of the transport come back as RPC_UNAVAILABLE (peer
 * unreachable or died mid-call: never a hang), RPC_DEADLINE_EXCEEDED,
 * RPC_RESOURCE_EXHAUSTED or RPC_CANCELLED (channel closed). */
void rpc_call(struct rpc_channel *ch, const ProtobufCServiceDescriptor *svc,
	      unsigned method, const ProtobufCMessage *req,
	      const struct buf_slice *payload, const struct rpc_call_opts *opts,
	      rpc_call_cb cb, void *ud);

/* rpc_call with req handed by reference instead of packed (the in-process
 * transport's zero-copy path).
 *
 * Ownership rule: req, and everything it points to, must stay valid and
 * unchanged for as long as `hold` has a reference. `hold` is a buf the
 * caller made for the object holding req (buf_init_embedded: no
 * allocation); the caller owns one reference and drops it when it no
 * longer needs req itself, typically in cb. The transport takes one more
 * reference for as long as the server may read req, and drops it once the
 * server has answered (or the call ended without reaching a handler).
 * The server's handler therefore reads the caller's memory: it must not
 * modify it (rpc_req_msg is const) and loses it when it answers. Use it
 * only for methods whose handlers keep to that (the OSD's PutShard and
 * GetShard); a handler that edits its request in place (meta's
 * PutAccessKey sealing) must be called with rpc_call.
 *
 * Because a deadline or a closed channel runs cb before the server has
 * answered, the last reference on hold may drop after cb, and on the
 * server's loop thread: hold's release function must be safe there.
 *
 * Over HTTP/2 (and whenever the fault-injection layer is armed) req is
 * packed before this returns, exactly as rpc_call does, and hold is not
 * referenced: the caller's reference is then the only one. */
void rpc_call_ref(struct rpc_channel *ch, const ProtobufCServiceDescriptor *svc,
		  unsigned method, const ProtobufCMessage *req, struct buf *hold,
		  const struct buf_slice *payload, const struct rpc_call_opts *opts,
		  rpc_call_cb cb, void *ud);

/* ------------------------------------------------------------ peer health
 *
 * Every TCP peer ("host:port") has one circuit, shared by all channels of
 * the process (common/rpc_health.c):
 *   RPC_PEER_UP       calls go out.
 *   RPC_PEER_DOWN     a connection failed (refused, connect timeout, lost,
 *                     or declared dead: a PING unanswered within
 *                     ping_timeout_ms); every call fails at once with
 *                     RPC_UNAVAILABLE until a probe succeeds.
 *   RPC_PEER_PROBING  past the backoff (exponential, jittered, from
 *                     backoff_min_ms to backoff_max_ms) one channel
 *                     reconnects and PINGs: its probe timer, or the first
 *                     call on a channel without a connection, which then
 *                     rides the probe (the half-open trial: it succeeds
 *                     or fails with the real cause). Other calls still
 *                     fail at once. The answer makes the peer UP again.
 * Connections PING when calls are outstanding and nothing was heard for
 * ping_busy_ms, or after ping_idle_ms idle; sockets carry SO_KEEPALIVE and
 * TCP_USER_TIMEOUT on both sides. In-process ("local:") targets have no
 * circuit and are always UP. */

enum rpc_peer_state { RPC_PEER_UP = 0, RPC_PEER_DOWN = 1, RPC_PEER_PROBING = 2 };

/* State of target's circuit (any thread); RPC_PEER_UP for a target never
 * called or not TCP. */
int rpc_peer_state(const char *target);
/* The same for a channel's peer, without a lookup (any thread). NULL
 * counts as RPC_PEER_DOWN. */
int rpc_channel_peer_state(const struct rpc_channel *ch);
/* The retry time of target's circuit, in loop_now_ms() time: while the
 * circuit is down and before this time, every call to target fails at
 * once; past it the next call on a channel without a connection is the
 * half-open trial. Meaningless when the circuit is up; 0 for a target
 * never called or not TCP (any thread). */
uint64_t rpc_peer_retry_at_ms(const char *target);
/* "up", "down", "probing". */
const char *rpc_peer_state_name(int state);

struct rpc_health_stats {
	uint64_t pings, ping_acks;         /* PINGs sent, answers received */
	uint64_t ping_rtt_us_sum, ping_rtt_us_max;
	uint64_t dead_declared;            /* connections whose PING went unanswered */
	uint64_t circuit_opens, circuit_closes;
	uint64_t probes;                   /* reconnect + PING attempts on down peers */
	uint64_t fast_fails;               /* calls failed at once: circuit not closed */
	uint64_t peers_not_up;             /* now */
};

/* Process-wide counters (any thread). */
void rpc_health_stats(struct rpc_health_stats *out);

struct metrics_registry;
/* Register gauges iolake_rpc_* reading rpc_health_stats on reg. 0 or
 * -errno (already registered counts as done). */
int rpc_health_register_metrics(struct metrics_registry *reg);

/* ------------------------------------------------------------ server */

struct rpc_server;
struct rpc_req;   /* one incoming call, owned by the server until answered */

/* A method's handler, run on the server's loop. It must eventually answer
 * with rpc_respond() or rpc_fail() exactly once, from the server's loop,
 * now or later. */
typedef void (*rpc_handler_fn)(struct rpc_req *r, void *ud);

struct rpc_server_opts {
	uint32_t max_message_bytes;   /* 0: 256 MiB; larger requests fail RESOURCE_EXHAUSTED */
	uint32_t max_streams;         /* 0: 1024 concurrent calls per connection */
	/* Call log (log_calls): a call answered slow_call_ms or more after it
	 * was dispatched is logged at warn ("slow call": method, ms, status,
	 * req=<the caller's request id>); a failure that is the server's own
	 * (INTERNAL, DATA_LOSS, UNKNOWN) at warn, any other failure at debug.
	 * Off: no clock read, nothing logged. */
	bool log_calls;
	uint32_t slow_call_ms;        /* 0 with log_calls: every call is slow */
	/* Mutual TLS on the TCP listener (common/rpc_tls.h); NULL: the
	 * process default (rpc_tls_default(), none unless set). */
	struct rpc_tls *tls;
	/* Admission before TLS and any handler (issue 16: the native port's
	 * per-address limits, gateway/native_srv.c); NULL: none. */
	const struct rpc_admit *admit;
	/* Frees what a handler left in a connection's data slot
	 * (rpc_req_conn_data) when the connection closes; NULL: free(). */
	void (*conn_data_free)(void *data);
};

/* A TCP server's admission hooks, run on its loop. */
struct rpc_admit {
	void *ud;
	/* A connection from addr (16 bytes: IPv6, IPv4 as ::ffff:a.b.c.d)
	 * was accepted: false closes it at once; else *slot is kept for the
	 * two below. */
	bool (*conn_open)(void *ud, const uint8_t addr[16], uint32_t *slot);
	void (*conn_close)(void *ud, uint32_t slot);
	/* A call's headers arrived on the connection of slot: false answers
	 * it RESOURCE_EXHAUSTED ("SlowDown: ...") before its body is kept
	 * or any handler runs. */
	bool (*call)(void *ud, uint32_t slot);
};

/* A method's direct handler, for the in-process transport only: it runs on
 * the CALLER's thread, inside rpc_call_ref() on a "local:" channel, in
 * place of posting the call to the server's loop (two loop hops saved).
 * It either answers r before it returns (rpc_respond / rpc_fail) and
 * returns true, or leaves r untouched and returns false: the call is then
 * posted to the server's loop as usual and the method's handler runs.
 * Only calls made with rpc_call_ref (the request by reference) and no
 * fault injection armed try it. The caller's callback still runs later on
 * its own loop, never inside rpc_call_ref, and the call keeps its deadline.
 *
 * Threads: any caller's thread, while the server's loop and other direct
 * handlers run: everything it touches must be safe for that. The server
 * stays registered until it returns (rpc_server_close waits for direct
 * handlers running; a writer-preferring lock, so a stream of calls cannot
 * hold a close off). It must not block, nor make RPC calls itself. */
typedef bool (*rpc_direct_fn)(struct rpc_req *r, void *ud);

/* A server on loop (opts may be NULL). NULL on out-of-memory. */
struct rpc_server *rpc_server_new(uv_loop_t *loop, const struct rpc_server_opts *opts);

/* Register a service: handlers[i] serves svc->methods[i] (NULL entries
 * answer UNIMPLEMENTED). The handlers array is copied. Returns 0, -EEXIST
 * when the service name is taken, -ENOMEM. */
int rpc_server_add_service(struct rpc_server *srv, const ProtobufCServiceDescriptor *svc,
			   const rpc_handler_fn *handlers, void *ud);

/* Give method `method` of svc (registered with rpc_server_add_service, the
 * same ud) a direct handler (see rpc_direct_fn). Before listening. 0 or
 * -ENOENT (no such service or method). */
int rpc_server_set_direct(struct rpc_server *srv, const ProtobufCServiceDescriptor *svc,
			  unsigned method, rpc_direct_fn fn);

/* Start accepting on addr: "host:port" (TCP; port 0 picks one, see
 * rpc_server_port) or "local:NAME" (in-process, NAME unique per process).
 * May be called for both kinds on one server. Returns 0 or -errno
 * (-EADDRINUSE, -EEXIST for a taken local name, -EINVAL). */
int rpc_server_listen(struct rpc_server *srv, const char *addr);

/* The TCP port bound by rpc_server_listen, or 0. */
int rpc_server_port(const struct rpc_server *srv);

/* A TCP connection accepted elsewhere (one listening socket for the
 * servers of several loops: gateway/native_loops.c over
 * gateway/http_accept.h): served from here on as if this server's own
 * listener had accepted it (admission, TLS, HTTP/2). fd is the server's
 * whatever the outcome (closed on failure). The server need not listen
 * itself; rpc_server_listen is then refused (-EALREADY). srv's loop only.
 * 0 or -errno (-ESHUTDOWN: closing). */
int rpc_server_adopt(struct rpc_server *srv, int fd);

/* TCP connections open now (accepted or adopted): any thread (an atomic
 * read), for an acceptor picking the least loaded server. */
uint32_t rpc_server_conns(const struct rpc_server *srv);

/* Stop listening and drop every connection (their pending callers get
 * UNAVAILABLE). Calls still in handlers must still be answered; the server
 * is freed when the last one is and libuv has released its handles. */
void rpc_server_close(struct rpc_server *srv);

/* The request message, unpacked; valid until the call is answered. */
const ProtobufCMessage *rpc_req_msg(const struct rpc_req *r);
/* The request payload (.buf NULL when none); valid until answered, or
 * longer with buf_ref(). */
const struct buf_slice *rpc_req_payload(const struct rpc_req *r);
/* The payload never left this process's memory (the in-process transport
 * hands the caller's buffer by reference): a crc the caller computed over
 * it and carried in the message is a crc of these very bytes. False over
 * HTTP/2, where they came off a socket and must be verified. A property of
 * the bytes, so a handler keeps one code path: it verifies unless this
 * says there is nothing to verify against. */
bool rpc_req_payload_in_memory(const struct rpc_req *r);
/* The request id the caller set (rpc_call_opts.request_id: the
 * x-request-id header on HTTP/2, a field of the call in process), or "".
 * Valid until the call is answered. Log it as req=: LOG_*_REQ(rpc_req_id(r), ...).
 * A peer's bytes: at most 128, escaped by the logger. */
const char *rpc_req_id(const struct rpc_req *r);
/* The admission slot of r's connection (rpc_admit.conn_open's), or
 * UINT32_MAX when the server has no admission hooks or r came in process. */
uint32_t rpc_req_admit_slot(const struct rpc_req *r);
/* The data slot of r's connection: state a service keeps per connection
 * (the native protocol's login, gateway/native_srv.c), NULL until a
 * handler stores something there, freed with the server's
 * opts.conn_data_free when the connection closes. The slot itself is
 * NULL for a call that came in process or whose connection has gone
 * (test it again after any wait: a connection may close meanwhile).
 * srv's loop only. */
void **rpc_req_conn_data(struct rpc_req *r);
/* Absolute deadline on loop_now_ms()'s clock, or 0 for none. */
uint64_t rpc_req_deadline_ms(const struct rpc_req *r);
/* True once the caller has gone (cancelled, deadline passed, connection
 * lost): the answer will be dropped, so long work may stop early. */
int rpc_req_cancelled(const struct rpc_req *r);

/* This call is a long poll (held until something changes): the call log
 * does not count it as slow. */
void rpc_req_long_poll(struct rpc_req *r);

/* Answer with resp (packed before this returns: the caller keeps
 * ownership) and an optional payload (a reference is taken). Frees r. */
void rpc_respond(struct rpc_req *r, const ProtobufCMessage *resp,
		 const struct buf_slice *payload);

/* Answer with resp given to the transport: resp and everything it points
 * to are heap memory of protobuf-c's default allocator (what
 * protobuf_c_message_free_unpacked(resp, NULL) frees), and from here on
 * the transport's. In process (the local transport) the caller's callback
 * gets resp itself, never packed, and may take it (rpc_answer_take);
 * otherwise it is packed as by rpc_respond, and freed. Frees r. */
void rpc_respond_give(struct rpc_req *r, ProtobufCMessage *resp,
		      const struct buf_slice *payload);

/* In a call's callback (or in what the callback calls on its thread
 * before it returns): when resp is an answer a server gave in process
 * (rpc_respond_give), the caller takes it: resp, now the caller's, to be
 * freed with protobuf_c_message_free_unpacked(m, NULL) (its sub-messages
 * may be detached and kept first). NULL for any other message, which
 * stays the transport's: copy what is kept. */
ProtobufCMessage *rpc_answer_take(const ProtobufCMessage *resp);

/* Answer with a non-OK status and a message (printf format). Frees r. */
void rpc_fail(struct rpc_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
