/*
 * http_parse.h — the request side of HTTP/1.1 as a pure state machine:
 * bytes in, events out (head complete, body pieces, message complete),
 * over Debian's http-parser. No sockets, no clock, no allocation: the
 * server (gateway/http.c) drives it from its read callback, and the fuzzer
 * (tests/fuzz/fuzz_http_request.c) drives it from arbitrary bytes.
 *
 * Owns the per-connection head arena: the request target and every header
 * name and value are copied into one fixed HTTP_HEAD_MAX-byte array as
 * they arrive (they may span reads), so the spans in struct http_request
 * stay valid until http_parse_next(), while the read buffer is reused.
 * Body bytes are NOT copied: on_body gets spans into the caller's input,
 * valid during the callback only.
 *
 * Invariants: one message at a time — after on_complete the parser pauses
 * itself, so a pipelined next request is not parsed (and the arena not
 * overwritten) until the caller calls http_parse_next(). Limits: target
 * > HTTP_URL_MAX -> 414; more than HTTP_MAX_HEADERS headers or target +
 * headers > HTTP_HEAD_MAX -> 431; an Expect other than 100-continue -> 417;
 * anything else malformed (HTTP/2 preface, HTTP/0.9, two Host headers) -> 400.
 *
 * Header spans are common/sigv4's struct sigv4_header so the S3 layer can
 * verify a signature over them without copying.
 */
#ifndef GATEWAY_HTTP_PARSE_H
#define GATEWAY_HTTP_PARSE_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"

#define HTTP_HEAD_MAX (16 * 1024)
#define HTTP_URL_MAX (8 * 1024)
#define HTTP_MAX_HEADERS 100

struct http_request {
	enum http_method method;
	const char *method_name;        /* "GET", static */
	const char *target;             /* raw request target, in the arena */
	size_t target_len;
	const char *path;               /* target up to '?' */
	size_t path_len;
	const char *query;              /* after '?', NULL if none */
	size_t query_len;
	struct sigv4_header headers[HTTP_MAX_HEADERS];
	size_t n_headers;
	const char *host;               /* Host value, NULL if absent */
	size_t host_len;
	uint64_t content_length;        /* valid when has_content_length */
	bool has_content_length;
	bool chunked;                   /* Transfer-Encoding: chunked */
	bool keep_alive;                /* what the client asked (version + Connection) */
	bool expect_continue;           /* Expect: 100-continue (also when bodiless) */
	bool has_body;                  /* chunked, or Content-Length > 0 */
	unsigned short http_major, http_minor;
};

/* Events. Each returns 0; to stop consuming input (back-pressure), call
 * http_parse_pause() inside the callback. */
struct http_parse_cb {
	void (*on_head)(void *ud, struct http_request *req);
	void (*on_body)(void *ud, const char *data, size_t len);
	void (*on_complete)(void *ud);
};

struct http_parse {
	http_parser p;
	const struct http_parse_cb *cb;
	void *ud;
	struct http_request req;
	int error_status;               /* 0, or 400/414/431 once failed (sticky) */
	const char *error_msg;          /* why, once failed: a static sentence */
	bool in_value;                  /* the last head bytes were a header value */
	size_t cl_first;                /* 1 + index of the first Content-Length header, or 0 */
	bool begun, head_done, msg_done;
	uint64_t body_bytes;            /* body bytes delivered for this message */
	size_t arena_len;
	char arena[HTTP_HEAD_MAX];
};

void http_parse_init(struct http_parse *hp, const struct http_parse_cb *cb, void *ud);

/* Feed len bytes. Returns how many were consumed: all of them, or fewer
 * when the parser is paused (feed the rest again after unpause) or has
 * failed (http_parse_error() then returns the status to answer with). */
size_t http_parse_feed(struct http_parse *hp, const char *data, size_t len);

/* Stop consuming at the current event (callable inside a callback or
 * between feeds), and allow it again. */
void http_parse_pause(struct http_parse *hp);
void http_parse_unpause(struct http_parse *hp);
bool http_parse_paused(const struct http_parse *hp);

/* After on_complete: forget the request (its spans die) and unpause for
 * the next one on the connection. */
void http_parse_next(struct http_parse *hp);

/* 0, or the HTTP status for the failure (400, 414, 417, 431). */
int http_parse_error(const struct http_parse *hp);

/* Once failed, what was wrong: a static sentence with no XML special
 * characters (ours, or http-parser's description of its error), for the
 * answer's message. NULL before. */
const char *http_parse_error_msg(const struct http_parse *hp);

/* True between the first byte of a request and its head being complete
 * (for the header timeout). */
bool http_parse_in_head(const struct http_parse *hp);

/* Case-insensitive header lookup in req; NULL if absent. */
const struct sigv4_header *http_request_header(const struct http_request *req, const char *name);

#endif
