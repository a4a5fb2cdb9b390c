/*
 * tls.h — TLS with OpenSSL 3 as a byte-in/byte-out codec, for the
 * gateway's HTTP/1.1 server (the S3 port) and for RPC's HTTP/2 (mutual
 * TLS between services, common/rpc_tls.c): ciphertext from the socket goes in
 * (tls_conn_feed), plaintext comes out (tls_conn_read); plaintext to send
 * goes in (tls_conn_write), ciphertext to put on the wire comes out
 * (tls_conn_take). No sockets, no loop: gateway/http.c moves the bytes,
 * so http.c parses and writes plaintext only, and the unit test drives a
 * server against an OpenSSL client in the same process.
 *
 * struct tls_server holds the certificate and key (an SSL_CTX): TLS 1.2
 * and 1.3 only, OpenSSL's default cipher list at security level >= 2, no
 * renegotiation, ALPN "http/1.1", session resumption (a server session
 * cache for TLS 1.2 ids, and tickets, whose keys survive a reload).
 * tls_server_reload swaps in a new certificate and key atomically: new
 * connections get them, open ones keep the old context; a file that fails
 * to load leaves the old ones in place. Thread-safe: reload may run on any
 * thread while connections are made on the server's loop.
 *
 * The same codec serves the other uses through struct tls_cfg: a client
 * context (tls_conn_new then starts the handshake as the client), a CA
 * file (the peer must present a certificate that chains to it: a server
 * then requires a client certificate), TLS 1.3 only, another ALPN list.
 */
#ifndef GATEWAY_TLS_H
#define GATEWAY_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tls_server;
struct tls_conn;
struct metrics_registry;

/* Counters since the server was made (monotonic). */
struct tls_stats {
	uint64_t handshakes;        /* completed */
	uint64_t failures;          /* connections that failed before completing one */
	uint64_t resumed;           /* handshakes that resumed a session */
	uint64_t tls12, tls13;      /* completed handshakes by version */
	uint64_t reloads, reload_failures;
};

/* What a context is made from (tls_server_new is { cert, key } with the
 * rest zero). */
struct tls_cfg {
	const char *cert_file, *key_file;  /* PEM; a client may present none (NULL) */
	const char *ca_file;               /* PEM CA(s): verify the peer; NULL: no check */
	bool client;                       /* connections start the handshake */
	bool tls13_only;                   /* else TLS 1.2 and 1.3 */
	const unsigned char *alpn;         /* wire format ("\x02h2"); NULL: http/1.1 */
	unsigned alpn_len;
	const char *sid_ctx;               /* session id context; NULL: "iolake-s3" */
	bool no_tickets;                   /* server: send no TLS 1.3 session tickets */
	const char *crl_file;              /* PEM CRL from the CA (with ca_file): a peer
					    * certificate it lists is refused; one past its
					    * nextUpdate still refuses what it lists and
					    * does not fail handshakes (fail-open: the
					    * caller watches and reports its age) */
};

/* A context from cfg. 0 and *out, or -EINVAL with err set, -ENOMEM. */
int tls_ctx_new(const struct tls_cfg *cfg, struct tls_server **out, char *err, size_t err_len);

/* Load the files of cfg again (the same shape: client, ALPN, versions). */
int tls_ctx_reload(struct tls_server *ts, const struct tls_cfg *cfg, char *err, size_t err_len);

/* Load cert (PEM, chain allowed) and key (PEM). 0 and *out, or -EINVAL
 * with a message in err (the file and OpenSSL's reason), -ENOMEM. */
int tls_server_new(const char *cert_file, const char *key_file, struct tls_server **out,
		   char *err, size_t err_len);

/* Replace certificate and key. 0, or -EINVAL with err set (the old ones
 * stay in use). */
int tls_server_reload(struct tls_server *ts, const char *cert_file, const char *key_file,
		      char *err, size_t err_len);

/* After every connection made from it is freed. NULL is ignored. */
void tls_server_free(struct tls_server *ts);

void tls_server_stats(const struct tls_server *ts, struct tls_stats *out);

/* Export the counters as iolake_gw_tls_* gauges in reg; ts must outlive
 * every render of reg. 0 or -errno. */
int tls_server_register_metrics(struct tls_server *ts, struct metrics_registry *reg);

/* The certificate in use (an X509 *), valid until the next reload; NULL
 * when none. */
const void *tls_server_cert(struct tls_server *ts);

/* The serial number of the certificate in use, hex (for logs). */
void tls_server_serial(struct tls_server *ts, char *buf, size_t cap);

/* ------------------------------------------------------------ connections */

/* A connection with the current certificate: a server side, or with a
 * client context the client side (its ClientHello is queued by the first
 * tls_conn_read). NULL: ENOMEM. */
struct tls_conn *tls_conn_new(struct tls_server *ts);
void tls_conn_free(struct tls_conn *t);

/* Ciphertext from the peer (copied). 0 or -ENOMEM. */
int tls_conn_feed(struct tls_conn *t, const void *data, size_t len);

#define TLS_EOF (-1000) /* the peer sent close_notify */

/* Plaintext received: > 0 bytes written to buf; 0 when more input is
 * needed (handshake progress may have queued output: see tls_conn_take);
 * TLS_EOF; -EPROTO when the peer broke the protocol (a fatal alert may
 * be queued for output). */
ssize_t tls_conn_read(struct tls_conn *t, void *buf, size_t cap);

/* True when everything fed has been consumed and no plaintext is held:
 * reading from the socket may go on without unbounded buffering. */
bool tls_conn_drained(const struct tls_conn *t);

/* Encrypt len bytes (all of them; output grows by about len + 22 per 16
 * KiB record). Only once the handshake is done. 0, -EPROTO, -ENOMEM. */
int tls_conn_write(struct tls_conn *t, const void *data, size_t len);

/* Ciphertext waiting to be sent. */
size_t tls_conn_pending(const struct tls_conn *t);

/* Move up to cap bytes of output into buf; returns the bytes moved. */
size_t tls_conn_take(struct tls_conn *t, void *buf, size_t cap);

/* All output, without a copy: the buffer (*cap bytes allocated) becomes
 * the caller's, to free() or give back. NULL (and *len 0) when there is
 * none. */
char *tls_conn_take_all(struct tls_conn *t, size_t *len, size_t *cap);

/* Give back a buffer from tls_conn_take_all once written: up to two are
 * kept and reused for later output (no fresh pages to fault in for each
 * large write), the rest freed. */
void tls_conn_recycle(struct tls_conn *t, char *buf, size_t cap);

/* Free the buffers kept for reuse (the server calls it between exchanges,
 * so an idle connection holds none). */
void tls_conn_trim(struct tls_conn *t);

/* Queue a close_notify (once; output follows through tls_conn_take). */
void tls_conn_close_notify(struct tls_conn *t);

bool tls_conn_handshake_done(const struct tls_conn *t);
/* Any byte fed yet. */
bool tls_conn_started(const struct tls_conn *t);
/* "TLSv1.3" and so on, or "" before the handshake. */
const char *tls_conn_version(const struct tls_conn *t);

/* Why the connection failed (-EPROTO): OpenSSL's reason and, when the
 * peer's certificate was refused, the verification error; "" before. */
const char *tls_conn_error(const struct tls_conn *t);

/* The ALPN protocol agreed, or NULL (*len 0). */
const unsigned char *tls_conn_alpn(const struct tls_conn *t, unsigned *len);

/* The peer's certificate (an X509 *, valid while t is), or NULL before
 * the handshake or without one. */
const void *tls_conn_peer_cert(const struct tls_conn *t);

/* After a reload of t's context (tls_ctx_reload): true when the new CRL
 * lists the peer's certificate (the caller drops the connection). Cheap
 * when nothing was reloaded since the last call: one atomic load. */
bool tls_conn_revoked(struct tls_conn *t);

/* The peer's certificate subject CN (after the handshake), or "". */
void tls_conn_peer_cn(const struct tls_conn *t, char *buf, size_t cap);

#endif
