/*
 * chunked.h — incremental decoder for S3's aws-chunked payload encoding
 * (Content-Encoding: aws-chunked), the body of STREAMING-* uploads:
 *
 *   <hex-size>;chunk-signature=<64 hex>\r\n<data>\r\n ...
 *   0;chunk-signature=<64 hex>\r\n
 *   [<trailer-name>:<value>\r\n ... x-amz-trailer-signature:<64 hex>\r\n]
 *   \r\n
 *
 * and the unsigned variant (STREAMING-UNSIGNED-PAYLOAD-TRAILER) without
 * chunk-signature extensions or trailer signature.
 *
 * Pure function of the bytes fed in: no I/O, no allocation after init
 * (one hash stream). Data is handed to the caller as it streams through;
 * a chunk's signature can only be checked when the chunk ends, so a
 * caller must not commit anything until chunked_done(): a failure later
 * (bad signature, bad framing, truncated body) means the upload is
 * rejected as a whole. Each signature chains over the previous one (the
 * seed is the request signature), so chunks cannot be reordered, dropped
 * or replayed.
 *
 * Limits: a chunk-size line of at most 256 bytes, a chunk of at most
 * CHUNKED_MAX_CHUNK bytes, trailers of at most CHUNKED_TRAILER_MAX bytes
 * and CHUNKED_MAX_TRAILERS lines.
 */
#ifndef GATEWAY_CHUNKED_H
#define GATEWAY_CHUNKED_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/hash.h"
#include "common/sigv4.h"

#define CHUNKED_MAX_CHUNK (64u << 20)
#define CHUNKED_TRAILER_MAX 4096
#define CHUNKED_MAX_TRAILERS 8
#define CHUNKED_LINE_MAX 256

/* Errors from chunked_feed (negative). */
#define CHUNKED_EFRAMING (-EBADMSG)      /* malformed encoding -> S3 IncompleteBody/InvalidRequest */
#define CHUNKED_ESIGNATURE (-EKEYREJECTED) /* a chunk/trailer signature -> SignatureDoesNotMatch */
#define CHUNKED_ETOOBIG (-E2BIG)         /* a limit above -> InvalidRequest / EntityTooLarge */

struct chunked_trailer {
	const char *name;   /* in the decoder's trailer buffer, NUL-terminated */
	const char *value;
	size_t name_len, value_len;
};

typedef void (*chunked_data_fn)(void *ud, const char *data, size_t len);

struct chunked_dec {
	int state;
	int err;                         /* sticky */
	bool signed_chunks;
	bool trailer_allowed;
	const struct sigv4_auth *auth;   /* scope + date (for the string to sign) */
	uint8_t key[32];                 /* signing key */
	char prev_sig[65];
	char claimed_sig[65];
	uint64_t remaining;              /* data bytes left in the current chunk */
	uint64_t chunk_size;
	uint64_t decoded;                /* data bytes delivered so far */
	bool last_chunk;
	size_t line_len;
	char line[CHUNKED_LINE_MAX];
	struct hash_stream *sha;
	size_t tbuf_len;
	char tbuf[CHUNKED_TRAILER_MAX];
	struct chunked_trailer trailers[CHUNKED_MAX_TRAILERS];
	size_t n_trailers;
};

/* Signed mode (key non-NULL): every chunk must carry chunk-signature,
 * verified with key over auth's scope, chained from seed_sig (the
 * request's own signature). Unsigned mode (key NULL): extensions are
 * ignored. trailer: trailing headers are allowed (…-TRAILER modes; in
 * signed mode they must end with a valid x-amz-trailer-signature).
 * Returns 0 or -ENOMEM. */
int chunked_init(struct chunked_dec *d, const uint8_t key[32], const struct sigv4_auth *auth,
		 const char *seed_sig, bool trailer);

void chunked_free(struct chunked_dec *d);

/* Consume len bytes, calling on_data for decoded payload. Returns the
 * number of bytes consumed — all of them, or fewer once the encoding is
 * complete (the rest is not ours) — or a negative CHUNKED_E* error
 * (sticky). */
ssize_t chunked_feed(struct chunked_dec *d, const char *in, size_t len, chunked_data_fn on_data,
		     void *ud);

/* The final chunk, trailers and closing CRLF have been seen and verified. */
bool chunked_done(const struct chunked_dec *d);

/* A trailer by name (case-insensitive), after chunked_done; NULL if absent. */
const struct chunked_trailer *chunked_trailer(const struct chunked_dec *d, const char *name);

#endif
