/*
 * rpc_tls.h — mutual TLS for RPC between services: a node's identity (the
 * cluster CA, its certificate and key, from --rpc-tls-ca, --rpc-tls-cert,
 * --rpc-tls-key) and the TLS 1.3 contexts made from it, one to accept and
 * one to connect. The HTTP/2 transport (common/rpc_h2*.c) puts TLS under
 * its framing when a channel or server has one (rpc_channel_opts.tls,
 * rpc_server_opts.tls, or the process default set here from the flags):
 *
 *   - the server requires TLS 1.3, ALPN "h2" and a client certificate that
 *     chains to the CA; a plaintext peer (an h2c preface, an HTTP/1 line,
 *     anything not a TLS record) and a failed handshake (no certificate,
 *     another CA, an expired one, no h2) are refused: the connection is
 *     closed, a line is logged (at most one a second per reason, with the
 *     count of lines left out) and iolake_rpc_tls_refused{reason} counts;
 *   - the client presents its certificate, offers h2 and checks the
 *     server's certificate against the CA: a server that fails fails the
 *     connection (its calls UNAVAILABLE with OpenSSL's reason) and counts
 *     iolake_rpc_tls_client_failures.
 *
 * Who the peer is comes from its certificate: the roles and node id of
 * common/rpc_authz.h (SAN URIs iolake:role:R, iolake:node:N); a server
 * refuses a certificate without a role (a clear log line: "issued before
 * roles") unless --rpc-tls-legacy-any-role, and checks every call against
 * the role table. There is no name check (targets are numeric addresses).
 *
 * Revocation: --rpc-tls-crl FILE (iolake-admin ca revoke / ca crl) is
 * checked at every handshake; reload (SIGHUP, or the CRL file changing:
 * rpc_tls_crl_poll) reads the four files again:
 * new connections use them, open ones keep theirs except that a
 * connection whose peer the new CRL lists is dropped at its next bytes
 * (servers also refuse its calls at once); a file that fails to load
 * keeps the old ones.
 *
 * Raft's port (meta/raft_tls.c) uses the same identity with its own pair
 * of contexts: ALPN "iolake-raft" (an RPC client offering h2 cannot
 * complete a handshake there, nor a Raft client on an RPC port), the meta
 * role required on both ends; its counters are iolake_raft_tls_*.
 *
 * The codec is common/tls.c (the S3 port's); this module owns the
 * identity, the process default, the flags, the counters and the refusal
 * log. Thread-safe: reload from any thread.
 */
#ifndef COMMON_RPC_TLS_H
#define COMMON_RPC_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/flags.h"

struct rpc_tls;
struct tls_conn;
struct metrics_registry;

/* The three files (PEM). */
struct rpc_tls_files {
	const char *ca, *cert, *key;
	const char *crl;              /* optional */
	bool legacy_any_role;         /* a certificate without a role is any role */
};

/* The flag_spec entries of every binary (put them in its specs array). */
#define RPC_TLS_FLAGS(f)                                                                     \
	{ .name = "rpc-tls-ca", .type = FLAG_STRING, .dst = &(f).ca, .metavar = "FILE",          \
	  .help = "mutual TLS on RPC: the cluster CA (PEM; iolake-admin ca init); with "          \
		  "--rpc-tls-cert and --rpc-tls-key (default: plain HTTP/2)" },                   \
	{ .name = "rpc-tls-cert", .type = FLAG_STRING, .dst = &(f).cert, .metavar = "FILE",      \
	  .help = "this node's certificate for RPC (PEM; iolake-admin ca issue); SIGHUP reloads" }, \
	{ .name = "rpc-tls-key", .type = FLAG_STRING, .dst = &(f).key, .metavar = "FILE",        \
	  .help = "the private key of --rpc-tls-cert (PEM)" },                                   \
	{ .name = "rpc-tls-crl", .type = FLAG_STRING, .dst = &(f).crl, .metavar = "FILE",        \
	  .help = "certificates revoked by the cluster CA (PEM CRL; iolake-admin ca revoke); "     \
		  "SIGHUP reloads it and drops connections of newly revoked peers" },             \
	{ .name = "rpc-tls-legacy-any-role", .type = FLAG_BOOL, .dst = &(f).legacy_any_role,    \
	  .help = "accept a peer certificate without an iolake role (issued before roles) as "   \
		  "every role, for an upgrade; default: refused" }

/* Load an identity. 0 and *out, or -EINVAL with err naming the file and
 * OpenSSL's reason (a key not matching its certificate included). cert
 * and key may both be NULL: a client that presents no certificate (tests;
 * such an identity cannot serve). */
int rpc_tls_new(const struct rpc_tls_files *f, struct rpc_tls **out, char *err, size_t err_len);

/* Read the files again (those given to rpc_tls_new). 0, or -EINVAL with
 * err (the old identity stays). */
int rpc_tls_reload(struct rpc_tls *t, char *err, size_t err_len);

/* After every connection using it is gone. NULL is ignored. */
void rpc_tls_free(struct rpc_tls *t);

/* The identity channels and servers use when their opts name none. NULL
 * (the start): plain HTTP/2. Set it before opening channels or servers. */
void rpc_tls_set_default(struct rpc_tls *t);
struct rpc_tls *rpc_tls_default(void);

/* A binary's start: no flag given, nothing (0); some but not all, -EINVAL
 * ("--rpc-tls-ca, --rpc-tls-cert and --rpc-tls-key go together"); else
 * load them, make them the process default and log it. */
int rpc_tls_setup(const struct rpc_tls_files *f, char *err, size_t err_len);

/* SIGHUP: reload the process default, log the outcome; no-op without. */
void rpc_tls_reload_default(void);

/*
 * The CRL's watch (issue 16). A CRL past its nextUpdate stays in force
 * (what it revokes stays refused) and does not fail handshakes: fail-open,
 * reported — a warning at most once per RPC_TLS_CRL_WARN_MS and the
 * gauges iolake_rpc_tls_crl_expired / _crl_next_update_seconds. The file
 * is re-read when its mtime or size changes, noticed at most every
 * RPC_TLS_CRL_POLL_MS by a new connection or a scrape of /metrics (and
 * at once by SIGHUP), so a copied-in CRL needs no signal.
 */
#define RPC_TLS_CRL_POLL_MS 5000
#define RPC_TLS_CRL_WARN_MS 3600000

/* Check t's CRL file (force: now, else at most every RPC_TLS_CRL_POLL_MS):
 * reload t when it changed, warn when expired. Returns 1 when the loaded
 * CRL is past its nextUpdate, else 0 (and for NULL / no CRL). Any thread. */
int rpc_tls_crl_poll(struct rpc_tls *t, bool force);

/* 1 when t's loaded CRL is past its nextUpdate, else 0. */
int rpc_tls_crl_expired(const struct rpc_tls *t);

/* Its nextUpdate in Unix seconds; 0 without a CRL or a nextUpdate. */
int64_t rpc_tls_crl_next_update(const struct rpc_tls *t);

struct rpc_tls_stats {
	uint64_t server_handshakes, client_handshakes;  /* completed */
	uint64_t refused_plaintext;   /* server: the peer did not speak TLS */
	uint64_t refused_handshake;   /* server: handshake failed (cert, CA, version, ALPN) */
	uint64_t client_failures;     /* client: the server's TLS failed or was refused */
	uint64_t reloads, reload_failures;
	uint64_t refused_role;        /* server: a certificate without a (valid) role */
	uint64_t dropped_revoked;     /* open connections dropped when a reload revoked the peer */
	uint64_t server_role_refused; /* client: the server's certificate lacks the service's role */
};

/* Process-wide counters (any thread). */
void rpc_tls_stats(struct rpc_tls_stats *out);

/* Gauges iolake_rpc_tls_* on reg (registered in any process, TLS or
 * not). 0 or -errno (already registered counts as done). */
int rpc_tls_register_metrics(struct metrics_registry *reg);

/* ------------------------------------------------------------ for the transport */

struct rpc_ident;

/* A connection's TLS (client or server side), NULL on out-of-memory. */
struct tls_conn *rpc_tls_conn_new(struct rpc_tls *t, bool server);

/* The handshake is done: check what was agreed (h2). 0, or -EPROTO with
 * why set. Counts the handshake when 0. */
int rpc_tls_conn_ready(struct tls_conn *tc, bool server, char *why, size_t cap);

/* Who the peer of a completed handshake is (common/rpc_authz.h): its
 * roles and node id from the SAN URIs, serial and CN. 0; -EACCES with why
 * when the certificate has no role (and t does not accept legacy ones:
 * out->legacy is set when it does) or an invalid iolake: URI. */
int rpc_tls_conn_peer(const struct rpc_tls *t, struct tls_conn *tc, struct rpc_ident *out,
		      char *why, size_t cap);

/* Parse the iolake: URIs of cert (an X509 *) into out (zeroed first).
 * 0, -EINVAL (an invalid iolake: URI; why set). Roles may be 0. */
int rpc_tls_cert_peer(const void *cert, struct rpc_ident *out, char *why, size_t cap);

/* ------------------------------------------------------------ Raft's port */

/* A Raft connection's TLS (ALPN iolake-raft), NULL on out-of-memory or a
 * client-only identity asked to serve. */
struct tls_conn *rpc_tls_raft_conn_new(struct rpc_tls *t, bool server);

/* The handshake of a Raft connection is done: ALPN iolake-raft agreed and
 * the peer holds the meta role (a legacy certificate passes when t allows
 * them). 0, or -EPROTO (ALPN) / -EACCES (role) with why. */
int rpc_tls_raft_ready(const struct rpc_tls *t, struct tls_conn *tc, char *why, size_t cap);

#define RPC_TLS_RAFT_REFUSALS(X)                                            \
	X(PLAINTEXT, "plaintext")  /* not a TLS record: a plaintext mux peer */ \
	X(HANDSHAKE, "handshake")  /* no/bad certificate, CA, ALPN, version */   \
	X(ROLE, "role")            /* a certificate without the meta role */     \
	X(REVOKED, "revoked")      /* listed by the CRL reloaded since */        \
	X(TIMEOUT, "timeout")      /* no handshake within the deadline */

enum rpc_tls_raft_refusal {
#define RPC_TLS_RAFT_ENUM(name, text) RPC_TLS_RAFT_##name,
	RPC_TLS_RAFT_REFUSALS(RPC_TLS_RAFT_ENUM)
#undef RPC_TLS_RAFT_ENUM
	RPC_TLS_RAFT_COUNT
};

/* A Raft connection refused (server side) or failed (client side; kind
 * says why): count, log (rate-limited). */
void rpc_tls_raft_refused(bool server, enum rpc_tls_raft_refusal kind, const char *peer,
			  const char *why);
/* A Raft handshake completed (both sides count their own). */
void rpc_tls_raft_handshake(bool server);

struct rpc_tls_raft_stats {
	uint64_t server_handshakes, client_handshakes;
	uint64_t refused[RPC_TLS_RAFT_COUNT];        /* server side */
	uint64_t client_failures[RPC_TLS_RAFT_COUNT];
	uint64_t dropped_revoked;                    /* open connections dropped at a reload */
};
void rpc_tls_raft_stats(struct rpc_tls_raft_stats *out);
void rpc_tls_raft_dropped_revoked(void);

enum rpc_tls_refusal { RPC_TLS_REFUSED_PLAINTEXT, RPC_TLS_REFUSED_HANDSHAKE, RPC_TLS_REFUSED_ROLE,
		       RPC_TLS_REFUSED_REVOKED };

/* A server refused peer (its "addr:port"): count, log (rate-limited). */
void rpc_tls_refused(enum rpc_tls_refusal kind, const char *peer, const char *why);

/* A client refused its server target: the certificate lacks the role
 * serving the service called, or has none (rpc_authz_server_check). */
void rpc_tls_server_role_refused(const char *target, const char *why);

/* A client's connection to target failed in TLS: count, log (rate-limited). */
void rpc_tls_client_failed(const char *target, const char *why);

/* True when the first byte a server reads cannot start a TLS handshake
 * (a record of type 22): the peer speaks plaintext. */
bool rpc_tls_is_plaintext(uint8_t first_byte);

#endif
