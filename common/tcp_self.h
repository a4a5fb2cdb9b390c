/*
 * tcp_self.h — has a TCP connect reached its own socket?
 *
 * Connecting to a port of this host that nothing listens on can, when the
 * kernel happens to pick that same port as the ephemeral source port,
 * complete as a TCP "simultaneous open" of the socket with itself: the
 * connect succeeds and every byte written comes back to the writer. A Raft
 * member that kept retrying a dead peer on 127.0.0.1 was seen doing this
 * for an hour (its heartbeats to that peer went to itself; the peer, back,
 * never heard from the leader). Every connector checks right after the
 * connect and treats a self-connection as a failed connect.
 *
 * Owns nothing; no I/O beyond getsockname/getpeername.
 */
#ifndef IOLAKE_COMMON_TCP_SELF_H
#define IOLAKE_COMMON_TCP_SELF_H

#include <stdbool.h>
#include <uv.h>

/* True when the connected socket's local and peer addresses are the same. */
bool tcp_self_connected(const uv_tcp_t *tcp);

#endif
