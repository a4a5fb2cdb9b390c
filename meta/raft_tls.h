/*
 * raft_tls.h — mutual TLS under Raft's port (issue 16): a relay that
 * terminates TLS on a TCP connection and gives libraft a plaintext
 * stream in its place.
 *
 * libraft's raft_uv reads, writes, closes and frees the uv_stream_t a
 * transport hands it, so TLS cannot sit inside that stream. Instead each
 * Raft TCP connection of a TLS member gets a relay: a socketpair whose
 * one end (a uv_pipe_t, raft_malloc'd) is what meta/raft_mux.c reads the
 * mux preamble from and hands to libraft, and whose other end the relay
 * pumps to and from the TLS connection (common/tls.c over memory BIOs,
 * the identity of common/rpc_tls.c: same CA, certificate, key and CRL as
 * RPC, ALPN "iolake-raft", the meta role required of the peer).
 *
 *   libraft <-> [pipe end]==socketpair==[relay end] <-> TLS <-> TCP <-> peer
 *
 * Bytes: one decryption or encryption and one copy through the
 * socketpair each way. Back-pressure: at most RAFT_TLS_QUEUE_HIGH bytes
 * wait to be written on either side; beyond, the relay stops reading the
 * other side until the queue drains below RAFT_TLS_QUEUE_LOW.
 *
 * Close: libraft closing its end sends a TLS close_notify once queued
 * bytes are out, then closes the TCP connection; the peer closing (TCP
 * EOF or close_notify) delivers what was decrypted, then closes the
 * socketpair, which libraft sees as EOF (reader) or a failed write
 * (writer, which reconnects). Errors close both at once; a close that
 * cannot drain within RAFT_TLS_CLOSE_MS is forced.
 *
 * Refusals (counted as iolake_raft_tls_refused{reason} on the accepting
 * side, iolake_raft_tls_client_failures{reason} on the connecting one,
 * logged at most once a second per reason by common/rpc_tls.c): a first
 * byte that cannot start TLS (a plaintext mux peer), a failed handshake
 * (no certificate, another CA, revoked, no ALPN iolake-raft), a
 * certificate without the meta role, no handshake within the deadline.
 * An open connection whose peer a reloaded CRL revokes is dropped at its
 * next bytes (heartbeats make that within ~100 ms on an active group).
 *
 * Thread: the loop given to raft_tls_relay_start, only.
 */
#ifndef META_RAFT_TLS_H
#define META_RAFT_TLS_H

#include <stdbool.h>
#include <uv.h>

struct rpc_tls;
struct raft_tls_relay;

#define RAFT_TLS_QUEUE_HIGH (256u << 10)  /* bytes queued on one side: stop reading the other */
#define RAFT_TLS_QUEUE_LOW (64u << 10)    /* ... until below this */
#define RAFT_TLS_CLOSE_MS 2000            /* a draining close is forced after this */

/* Client side: the handshake completed with a meta peer (status 0), or
 * the connection failed before (status < 0, why set; the relay then
 * closes itself and the plaintext end sees EOF). Called once, unless the
 * relay was detached first. */
typedef void (*raft_tls_ready_cb)(void *ud, int status, const char *why);

/*
 * Relay tcp (a raft_malloc'd, connected or accepted uv_tcp_t on loop,
 * reading not started) through TLS with identity tls: server for an
 * accepted connection, else client. On 0: the relay owns tcp (closes and
 * raft_frees it), *plain is a raft_malloc'd uv_pipe_t on loop — the
 * plaintext end, the caller's to read, write, close and raft_free (or to
 * hand to libraft, which does) — and *out the relay (valid until cb runs
 * or raft_tls_relay_detach; a server relay needs neither: pass NULLs).
 * peer names the other side in logs ("addr:port"). The handshake must
 * complete within timeout_ms. Returns -errno (socketpair, pipe) or
 * -ENOMEM, and then tcp is untouched (the caller's to close).
 */
int raft_tls_relay_start(uv_loop_t *loop, struct rpc_tls *tls, bool server, uv_tcp_t *tcp,
			 const char *peer, unsigned timeout_ms, raft_tls_ready_cb cb, void *ud,
			 uv_pipe_t **plain, struct raft_tls_relay **out);

/* The caller no longer wants the ready callback (it closes the plaintext
 * end itself; the relay then closes). Before the callback only. */
void raft_tls_relay_detach(struct raft_tls_relay *r);

/* Relays open now on this thread (tests). */
unsigned raft_tls_relays_open(void);

#endif
