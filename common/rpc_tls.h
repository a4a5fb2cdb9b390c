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
 * Any certificate signed by the CA is any node: there is no per-node
 * authorization and no name check (targets are numeric addresses).
 * Reload (SIGHUP) reads the three files again: new connections use them,
 * open ones keep theirs; a file that fails to load keeps the old ones.
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
};

/* The flag_spec entries of every binary (put them in its specs array). */
#define RPC_TLS_FLAGS(f)                                                                     \
	{ .name = "rpc-tls-ca", .type = FLAG_STRING, .dst = &(f).ca, .metavar = "FILE",          \
	  .help = "mutual TLS on RPC: the cluster CA (PEM; iolake-admin ca init); with "          \
		  "--rpc-tls-cert and --rpc-tls-key (default: plain HTTP/2)" },                   \
	{ .name = "rpc-tls-cert", .type = FLAG_STRING, .dst = &(f).cert, .metavar = "FILE",      \
	  .help = "this node's certificate for RPC (PEM; iolake-admin ca issue); SIGHUP reloads" }, \
	{ .name = "rpc-tls-key", .type = FLAG_STRING, .dst = &(f).key, .metavar = "FILE",        \
	  .help = "the private key of --rpc-tls-cert (PEM)" }

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

struct rpc_tls_stats {
	uint64_t server_handshakes, client_handshakes;  /* completed */
	uint64_t refused_plaintext;   /* server: the peer did not speak TLS */
	uint64_t refused_handshake;   /* server: handshake failed (cert, CA, version, ALPN) */
	uint64_t client_failures;     /* client: the server's TLS failed or was refused */
	uint64_t reloads, reload_failures;
};

/* Process-wide counters (any thread). */
void rpc_tls_stats(struct rpc_tls_stats *out);

/* Gauges iolake_rpc_tls_* on reg (registered in any process, TLS or
 * not). 0 or -errno (already registered counts as done). */
int rpc_tls_register_metrics(struct metrics_registry *reg);

/* ------------------------------------------------------------ for the transport */

/* A connection's TLS (client or server side), NULL on out-of-memory. */
struct tls_conn *rpc_tls_conn_new(struct rpc_tls *t, bool server);

/* The handshake is done: check what was agreed (h2). 0, or -EPROTO with
 * why set. Counts the handshake when 0. */
int rpc_tls_conn_ready(struct tls_conn *tc, bool server, char *why, size_t cap);

enum rpc_tls_refusal { RPC_TLS_REFUSED_PLAINTEXT, RPC_TLS_REFUSED_HANDSHAKE };

/* A server refused peer (its "addr:port"): count, log (rate-limited). */
void rpc_tls_refused(enum rpc_tls_refusal kind, const char *peer, const char *why);

/* A client's connection to target failed in TLS: count, log (rate-limited). */
void rpc_tls_client_failed(const char *target, const char *why);

/* True when the first byte a server reads cannot start a TLS handshake
 * (a record of type 22): the peer speaks plaintext. */
bool rpc_tls_is_plaintext(uint8_t first_byte);

#endif
