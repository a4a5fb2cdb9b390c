/*
 * raft_mux.h — one TCP port per meta member for many Raft groups: a
 * struct raft_uv_transport per group (what raft_uv_init takes in place of
 * raft_uv_tcp) whose connections all go through one listener.
 *
 * Multi-Raft (issue 13) puts a root group and many range groups on the
 * same members. With raft_uv_tcp each group would need a port of its own;
 * here every connection starts with a preamble naming its group, and the
 * accepting side hands the stream to that group's raft_uv. After the
 * preamble the bytes on a stream are libraft's own, unchanged: one stream
 * carries one group's messages in one direction, as with raft_uv_tcp.
 *
 * Wire preamble, written once by the connecting side (all integers
 * little-endian, every field 8-byte aligned):
 *
 *   off  len  field
 *     0    8  magic "IOLRMUX1" (a raft_uv_tcp peer, which starts with its
 *             protocol number 1, is refused as bad magic)
 *     8    8  group id (any u64)
 *    16    8  libraft handshake protocol, RAFT_MUX_PROTOCOL (1)
 *    24    8  the connecting server's Raft id (> 0)
 *    32    8  address length L: a multiple of 8, 8..RAFT_MUX_ADDR_MAX
 *    40    L  the connecting server's Raft address, NUL-terminated,
 *             printable ASCII, padded to L (padding bytes not checked)
 *
 * A meta member runs every group it hosts over one mux on RPC port + 1
 * (meta/group.c: the root is group 0). A raft_uv_tcp member (from before
 * groups) cannot talk to a mux member: all members move together.
 * Everything here runs on the mux's loop thread.
 */
#ifndef META_RAFT_MUX_H
#define META_RAFT_MUX_H

#include <raft.h>
#include <raft/uv.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define RAFT_MUX_MAGIC "IOLRMUX1"         /* 8 bytes, no NUL on the wire */
#define RAFT_MUX_PROTOCOL 1               /* libraft's uv_tcp handshake protocol */
#define RAFT_MUX_HDR_BYTES 40             /* the fixed fields */
#define RAFT_MUX_ADDR_MAX 256             /* address field, padding and NUL included */
#define RAFT_MUX_PREAMBLE_MAX (RAFT_MUX_HDR_BYTES + RAFT_MUX_ADDR_MAX)
#define RAFT_MUX_HANDSHAKES_MAX 64        /* accepted connections reading a preamble;
                                           * beyond, the rest wait in the kernel's backlog */
#define RAFT_MUX_HANDSHAKE_TIMEOUT_MS 5000 /* default: a preamble not complete by then
                                           * is refused (RAFT_MUX_R_TIMEOUT) */
#define RAFT_MUX_LOG_INTERVAL_MS 10000    /* at most one refusal line per reason per interval */

/* A decoded preamble. */
struct raft_mux_preamble {
	uint64_t group;                   /* group id */
	raft_id server_id;                /* the connecting server, > 0 */
	char address[RAFT_MUX_ADDR_MAX];  /* its Raft address, NUL-terminated */
	size_t len;                       /* bytes the preamble took on the wire */
};

/*
 * Decode a preamble from the first len bytes of p (len may be 0; bytes
 * past the preamble are left alone). Pure: no I/O, no allocation.
 * Returns
 *   0      out is filled; out->len <= len bytes were the preamble;
 *   n > 0  n > len: nothing is wrong so far, but deciding needs at least
 *          n bytes in all (RAFT_MUX_HDR_BYTES, then the whole preamble,
 *          never more than RAFT_MUX_PREAMBLE_MAX): read up to n, call again;
 *   < 0    not a valid preamble, as soon as the bytes show it:
 *          -EBADMSG (magic), -EPROTONOSUPPORT (protocol), -EINVAL (server id
 *          0), -EMSGSIZE (address length 0, not a multiple of 8, or above
 *          RAFT_MUX_ADDR_MAX), -EILSEQ (address empty, not NUL-terminated
 *          within its length, or not printable ASCII).
 * out is written only when 0 is returned.
 */
int raft_mux_preamble_decode(const uint8_t *p, size_t len, struct raft_mux_preamble *out);

/*
 * Encode the preamble for group, server_id and address into buf (cap
 * bytes; RAFT_MUX_PREAMBLE_MAX always suffices). Padding is zeroed.
 * Returns the bytes written (a multiple of 8), or -EINVAL (server_id 0,
 * address empty or not printable ASCII), -ENAMETOOLONG (address does not
 * fit RAFT_MUX_ADDR_MAX with its NUL), -ENOSPC (cap too small).
 */
int raft_mux_preamble_encode(uint8_t *buf, size_t cap, uint64_t group, raft_id server_id,
			     const char *address);

/* Why an incoming connection was closed before reaching a group. */
#define RAFT_MUX_REFUSALS(X)                                                       \
	X(BAD_MAGIC,      "bad_magic")       /* not our magic: not a mux peer */       \
	X(BAD_PROTOCOL,   "bad_protocol")    /* libraft handshake protocol != 1 */     \
	X(BAD_SERVER_ID,  "bad_server_id")   /* server id 0 */                         \
	X(BAD_ADDRESS,    "bad_address")     /* length or bytes of the address */      \
	X(UNKNOWN_GROUP,  "unknown_group")   /* no transport for that group id */      \
	X(NOT_LISTENING,  "not_listening")   /* group known, raft not started or closing */ \
	X(TIMEOUT,        "timeout")         /* preamble incomplete after the timeout */ \
	X(EOF,            "eof")             /* peer closed before a whole preamble */ \
	X(READ_ERROR,     "read_error")      /* the socket failed */                   \
	X(ACCEPT_ERROR,   "accept_error")    /* the listener reported an error */

enum raft_mux_refusal {
#define RAFT_MUX_R_ENUM(name, text) RAFT_MUX_R_##name,
	RAFT_MUX_REFUSALS(RAFT_MUX_R_ENUM)
#undef RAFT_MUX_R_ENUM
	RAFT_MUX_R_COUNT
};

/* "bad_magic", ...; "?" outside the enum. Static. */
const char *raft_mux_refusal_name(enum raft_mux_refusal why);

struct raft_mux_stats {
	uint64_t accepted;                   /* streams handed to a group */
	uint64_t refused[RAFT_MUX_R_COUNT];  /* closed before reaching a group, by reason */
	uint64_t connects;                   /* outgoing streams handed to a group */
	uint64_t self_connects;              /* outgoing connects that reached their own
	                                      * socket (common/tcp_self.h), failed */
	uint32_t handshakes;                 /* preambles being read now */
	uint32_t groups;                     /* transports made and not yet released */
};

struct raft_mux;

/*
 * Listen on address ("A.B.C.D:PORT", IPv4 numeric; port 0 picks a free
 * one, see raft_mux_address) on loop. Call on the loop's thread.
 * Returns 0 and *out, or -EINVAL (address), -EADDRINUSE / -EADDRNOTAVAIL /
 * another -errno from bind or listen (logged with the address), -ENOMEM.
 * On failure the memory is released on a later turn of loop.
 */
int raft_mux_init(struct raft_mux **out, uv_loop_t *loop, const char *address);

/* The address the listener is bound to, with the real port. Valid until
 * the mux is freed. */
const char *raft_mux_address(const struct raft_mux *m);
int raft_mux_port(const struct raft_mux *m);

/* Incoming connections whose preamble is not complete after timeout_ms
 * (> 0) from now on are refused. */
void raft_mux_set_handshake_timeout(struct raft_mux *m, unsigned timeout_ms);

void raft_mux_get_stats(const struct raft_mux *m, struct raft_mux_stats *out);

/*
 * Fill t as a transport for group_id on m, for raft_uv_init(io, loop, dir,
 * t) of that group; t->data is left as it was (raft_uv owns it). The group
 * is known from now on, but incoming connections for it are refused
 * (RAFT_MUX_R_NOT_LISTENING) until its raft_uv listens (raft_start), and
 * again once its raft closes the transport; its peers retry by themselves.
 * Groups may be added while others run. Their order of closing is free.
 * Returns 0, -EEXIST (a transport for group_id exists and is not yet
 * closed), -ESHUTDOWN (raft_mux_close was called), -ENOMEM.
 */
int raft_mux_transport_init(struct raft_mux *m, struct raft_uv_transport *t, uint64_t group_id);

/*
 * Release what raft_mux_transport_init allocated, as raft_uv_tcp_close
 * does: after raft_uv's close of the transport has completed (raft_close's
 * callback, before or after raft_uv_close), or when the transport was
 * never started (raft_uv_init or raft_init failed). Then t may go.
 */
void raft_mux_transport_close(struct raft_uv_transport *t);

/*
 * Stop listening: the listener closes and preambles being read are
 * dropped (not counted as refusals). m is freed, and cb(ud) called on the
 * loop, once every transport made on m has been released with
 * raft_mux_transport_close: transports still open keep working meanwhile
 * (their own outgoing connections do not need the listener), and
 * raft_mux_close does not close them — they belong to their rafts. Call
 * once; cb may be NULL.
 */
void raft_mux_close(struct raft_mux *m, void (*cb)(void *ud), void *ud);

#endif
