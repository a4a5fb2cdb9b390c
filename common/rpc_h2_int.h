/*
 * rpc_h2_int.h — what the HTTP/2 transport's three files share: the
 * connection core (rpc_h2.c: output batches, reads, the pump, a failed
 * connection), the client half (rpc_h2_client.c: calls and channels) and
 * the server half (rpc_h2_server.c: requests and the listener). Nothing
 * outside common/rpc_h2*.c includes this. The design (batches, re-entrancy,
 * lifetimes, failure detection) is in rpc_h2.c's opening comment.
 */
#ifndef COMMON_RPC_H2_INT_H
#define COMMON_RPC_H2_INT_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "common/rpc_authz.h"
#include "common/rpc_internal.h"
#include "common/rpc_tls.h"
#include "common/tls.h"

#define H2_WINDOW (32u << 20)       /* stream and connection receive window */
#define H2_FRAME_BYTES (256u << 10) /* largest DATA frame, either way (SETTINGS) */
#define H2_READ_BYTES (64u << 10)
#define H2_STAGE_BYTES (64u << 10)  /* copied frame bytes per batch */
#define H2_BATCH_IOVS 256
#define H2_BATCH_BYTES (1u << 20)   /* total bytes per uv_write */

/* The body we send on a stream: prefixed message, then optionally the
 * payload as a second gRPC message. */
struct h2_body {
	struct buf *msg;          /* 5-byte prefix + packed protobuf */
	uint8_t pfx[GRPC_PREFIX_BYTES];
	struct buf_slice payload; /* .buf NULL: none */
	size_t off, total;        /* bytes handed to batches / all bytes */
	bool trailers;            /* server: grpc-status trailers after it */
};

struct h2_call;
struct h2_sreq;

struct h2_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;              /* client: connect timeout, then health tick */
	/* h2_conn_kick's deferred pump: the check runs after the turn's I/O,
	 * the idle keeps that turn's poll from blocking; both active exactly
	 * while a pump is owed. */
	uv_check_t kick;
	uv_idle_t kick_idle;
	uv_connect_t connect_req;
	uv_write_t wreq;
	nghttp2_session *sess;         /* NULL until connected */
	bool server, dead, writing, in_session, pumping;
	bool declared_dead;            /* client: failed by PING timeout */
	uint64_t last_rx_ms;           /* uv_now of the last bytes read */
	uint64_t ping_sent_ms;         /* uv_now of the PING unanswered, 0: none */
	uint64_t ping_sent_ns;         /* its uv_hrtime, for the RTT */
	int handles;                   /* libuv handles not yet closed */
	struct h2_chan *ch;            /* client */
	struct rpc_h2_server *hs;      /* server, while listed in hs->conns */
	struct rpc_server *srv;        /* server: a reference */
	struct h2_conn *prev, *next;   /* server: all connections */
	struct h2_call *streams;       /* client: calls with an open stream */
	struct h2_call *done_head, *done_tail;   /* client: to deliver */
	struct h2_sreq *sstreams;      /* server: requests with an open stream */
	struct h2_sreq *ready_head, *ready_tail; /* server: to dispatch */
	/* TLS under HTTP/2 (rpc_tls.h); tls NULL: cleartext. Until tls_up
	 * (handshake done, h2 agreed) there is no session. */
	struct tls_conn *tls;
	bool tls_up, tls_seen;         /* seen: a server read its first byte */
	char *tls_wbuf;                /* ciphertext being written */
	size_t tls_wcap;
	char peer[64];                 /* server: the peer's address, for logs */
	uint32_t admit_slot;           /* server: rpc_admit's slot (UINT32_MAX: none) */
	void *data;                    /* server: rpc_req_conn_data's slot */
	bool admitted;                 /* server: conn_close is owed */
	/* Server with TLS: who the peer's certificate says it is (roles, node
	 * id: common/rpc_authz.h); every call is checked against it. */
	struct rpc_ident tls_peer;
	struct rpc_tls *hs_tls;        /* the identity c->tls was made from */
	/* Input straight into a message (rpc_h2.c, "Input"): the DATA frame
	 * being read and the message a read lands in. */
	int32_t rx_stream;             /* 0: not inside an unpadded DATA frame */
	size_t rx_left;                /* its payload bytes not yet seen */
	struct buf *rx_direct;         /* between on_alloc and on_read: a reference */
	/* Output batch. */
	unsigned niov, nrefs;
	size_t batch_bytes, stage_len;
	uv_buf_t iov[H2_BATCH_IOVS];
	struct buf *refs[H2_BATCH_IOVS];
	uint8_t stage[H2_STAGE_BYTES];
	uint8_t rbuf[H2_READ_BYTES];
};

struct h2_chan {
	struct rpc_channel base;
	struct sockaddr_storage addr;
	struct h2_conn *conn;          /* connecting or connected, or NULL */
	struct h2_call *calls;         /* not yet completed */
	uv_timer_t probe_timer;        /* reconnect to a down peer at its retry time */
	bool probing;                  /* ch->conn is the peer's probe */
};

struct h2_call {
	struct h2_call *prev, *next;   /* ch->calls while not done */
	struct h2_call *sprev, *snext; /* conn->streams while stream_open */
	struct h2_call *dnext;         /* conn->done list */
	struct h2_chan *ch;
	struct h2_conn *conn;          /* while stream_open */
	int32_t stream_id;             /* 0: waiting for the connection */
	bool stream_open, done, delivered;
	rpc_call_cb cb;
	void *ud;
	const ProtobufCMessageDescriptor *out;
	const char *service;           /* its descriptor's name (server role check) */
	struct rpc_dl dl;
	uint32_t timeout_ms;
	struct h2_body body;
	struct grpc_parser parser;
	int http_status;
	int grpc_status;               /* -1: none received */
	int status;                    /* final, once done */
	char message[RPC_MAX_MESSAGE_TEXT];
	char *path, *id;               /* point after the struct */
};

struct h2_sreq {
	struct rpc_req base;
	struct h2_sreq *sprev, *snext; /* conn->sstreams while stream_open */
	struct h2_sreq *rnext;         /* conn->ready list */
	struct h2_conn *conn;          /* NULL once the stream is gone */
	int32_t stream_id;
	enum { SR_READING, SR_READY, SR_HANDLER, SR_ANSWERED } state;
	bool stream_open;
	struct grpc_parser parser;
	struct h2_body body;
	char id[RPC_MAX_REQUEST_ID + 1];
};

struct rpc_h2_server {
	struct rpc_server *srv;
	uv_tcp_t listener;             /* initialized when listening */
	bool listening;                /* false: it only adopts (rpc_server_adopt) */
	struct h2_conn *conns;
};

/* ------------------------------------------------------------ lists */

#define DLIST_ADD(head, x, PREV, NEXT)        \
	do {                                  \
		(x)->PREV = NULL;             \
		(x)->NEXT = (head);           \
		if (head)                     \
			(head)->PREV = (x);   \
		(head) = (x);                 \
	} while (0)
#define DLIST_DEL(head, x, PREV, NEXT)                \
	do {                                          \
		if ((x)->PREV)                        \
			(x)->PREV->NEXT = (x)->NEXT;  \
		else                                  \
			(head) = (x)->NEXT;           \
		if ((x)->NEXT)                        \
			(x)->NEXT->PREV = (x)->PREV;  \
		(x)->PREV = (x)->NEXT = NULL;         \
	} while (0)

/* A header field (nghttp2_nv) from a literal name. */
#define NV(n, v, vl) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME }

/* ------------------------------------------------------------ core (rpc_h2.c) */

void h2_body_init(struct h2_body *b, struct buf *msg, const struct buf_slice *payload);
void h2_body_free(struct h2_body *b);
/* nghttp2's data source for an h2_body (source.ptr). */
ssize_t h2_on_read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
			uint32_t *flags, nghttp2_data_source *src, void *ud);
/* A connection on loop (tcp, timer and the kick's two handles
 * initialised: H2_CONN_HANDLES), or NULL. */
struct h2_conn *h2_conn_new(uv_loop_t *loop);
void h2_on_conn_handle_closed(uv_handle_t *h);
#define H2_CONN_HANDLES 4
/* Close c's handles (h2_on_conn_handle_closed frees c after the last). */
void h2_conn_close_handles(struct h2_conn *c);
/* Start the session (client or server by c->server), read, send SETTINGS. */
int h2_session_start(struct h2_conn *c, const nghttp2_session_callbacks *cbs, uint32_t streams);
/* Start TLS on a connected socket with identity t: reading starts, a
 * client sends its hello; when the handshake is done, the side's
 * h2_*_tls_up runs (it starts the session). 0 or -errno. */
int h2_tls_start(struct h2_conn *c, struct rpc_tls *t);
/* Run queued completions / requests, let nghttp2 write; never inside nghttp2. */
void h2_conn_pump(struct h2_conn *c);
/* A pump owed for work queued outside c's own I/O (a server's answer
 * ready): run once at the end of this loop turn, after its I/O callbacks,
 * so what the turn queued on c leaves in one write (Redis's beforeSleep
 * write). Inside a pump, nothing: the outer pump sends it. */
void h2_conn_kick(struct h2_conn *c);
/* The connection is dead: its calls or requests end, handles close. */
void h2_conn_fail(struct h2_conn *c, const char *why);
/* DATA payload bytes of the frame being read were consumed (the halves'
 * data chunk callbacks). */
void h2_rx_data(struct h2_conn *c, size_t len);
bool h2_name_is(const uint8_t *name, size_t len, const char *lit);
nghttp2_session_callbacks *h2_callbacks_new(void);

/* ------------------------------------------------------------ client (rpc_h2_client.c) */

/* Deliver the calls completed inside nghttp2. */
void h2_run_done(struct h2_conn *c);
void h2_client_conn_lost(struct h2_conn *c, const char *why);
/* The TLS handshake is done: start the session, send what waited. */
void h2_client_tls_up(struct h2_conn *c);
/* The parser of a call still reading its answer on stream id, or NULL. */
struct grpc_parser *h2_client_parser(struct h2_conn *c, int32_t id);

/* ------------------------------------------------------------ server (rpc_h2_server.c) */

/* Dispatch the requests whose body is complete. */
void h2_run_ready(struct h2_conn *c);
void h2_server_conn_lost(struct h2_conn *c);
void h2_server_tls_up(struct h2_conn *c);
/* The parser of a request still reading its body on stream id, or NULL. */
struct grpc_parser *h2_server_parser(struct h2_conn *c, int32_t id);

#endif
