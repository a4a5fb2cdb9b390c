/*
 * fuzz_http_request.c — libFuzzer target for gateway/http_parse: the
 * request head + body state machine without sockets, driven the way the
 * server drives it (pieces of varying size, pauses and resumes, the next
 * pipelined request after each completion).
 *
 * Input: byte 0 seeds the piece sizes and pause decisions; the rest is the
 * byte stream from the "client". Checked on every event: spans lie inside
 * the arena, limits hold, Content-Length bodies deliver exactly their
 * length, nothing is delivered after a failure, a head carries at most
 * one Content-Length header (repeats of one value are folded), a failure
 * has a message with nothing to escape in XML.
 *
 * Build (not in the Makefile):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. \
 *     tests/fuzz/fuzz_http_request.c gateway/http_parse.c -lhttp_parser \
 *     -o build/fuzz_http_request
 *   build/fuzz_http_request tests/fuzz/corpus/http_request
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/http_parse.h"

struct st {
	struct http_parse hp;
	uint32_t rng;
	bool in_msg;
	bool pause_next;
	uint64_t body;
	int messages;
};

static uint32_t rnd(struct st *s)
{
	s->rng = s->rng * 1103515245u + 12345u;
	return s->rng >> 16;
}

static void check_span(struct st *s, const char *p, size_t n)
{
	if (n == 0)
		return;
	if (p < s->hp.arena || p + n > s->hp.arena + s->hp.arena_len)
		abort();
}

static void on_head(void *ud, struct http_request *r)
{
	struct st *s = ud;
	if (s->in_msg || http_parse_error(&s->hp))
		abort();
	s->in_msg = true;
	s->body = 0;
	if (r->n_headers > HTTP_MAX_HEADERS || r->target_len > HTTP_URL_MAX)
		abort();
	check_span(s, r->target, r->target_len);
	check_span(s, r->path, r->path_len);
	if (r->query)
		check_span(s, r->query, r->query_len);
	for (size_t i = 0; i < r->n_headers; i++) {
		check_span(s, r->headers[i].name, r->headers[i].name_len);
		check_span(s, r->headers[i].value, r->headers[i].value_len);
	}
	if (r->host)
		check_span(s, r->host, r->host_len);
	if (r->chunked && r->content_length)
		abort();
	/* Repeats of one Content-Length reach the handler as one header
	 * whose value is the length framing the body; differing ones never. */
	size_t cl = 0;
	for (size_t i = 0; i < r->n_headers; i++)
		if (r->headers[i].name_len == 14 &&
		    strncasecmp(r->headers[i].name, "content-length", 14) == 0)
			cl++;
	if (cl > 1 || (cl == 1) != r->has_content_length)
		abort();
	if (rnd(s) % 4 == 0)
		http_parse_pause(&s->hp); /* like a handler awaiting auth */
}

static void on_body(void *ud, const char *data, size_t len)
{
	struct st *s = ud;
	if (!s->in_msg || len == 0)
		abort();
	volatile char sink = data[0] ^ data[len - 1]; /* ASan: the span is readable */
	(void)sink;
	s->body += len;
	if (!s->hp.req.chunked && s->body > s->hp.req.content_length)
		abort();
	if (rnd(s) % 3 == 0)
		http_parse_pause(&s->hp);
}

static void on_complete(void *ud)
{
	struct st *s = ud;
	if (!s->in_msg)
		abort();
	if (!s->hp.req.chunked && s->body != s->hp.req.content_length)
		abort();
	s->in_msg = false;
	s->messages++;
}

static const struct http_parse_cb cb = { on_head, on_body, on_complete };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static struct st s; /* 20 KiB: keep it off the stack */
	memset(&s, 0xAA, sizeof(s)); /* init must not rely on zeroed memory */
	s.rng = data[0];
	s.in_msg = false;
	s.pause_next = false;
	s.body = 0;
	s.messages = 0;
	http_parse_init(&s.hp, &cb, &s);
	const char *p = (const char *)data + 1;
	size_t left = size - 1;
	int stalls = 0;
	while (left > 0 && !http_parse_error(&s.hp)) {
		size_t piece = 1 + rnd(&s) % 64;
		if (piece > left)
			piece = left;
		size_t n = http_parse_feed(&s.hp, p, piece);
		if (n > piece)
			abort();
		p += n;
		left -= n;
		if (http_parse_error(&s.hp))
			break;
		if (http_parse_paused(&s.hp)) {
			if (s.hp.msg_done)
				http_parse_next(&s.hp);
			else
				http_parse_unpause(&s.hp);
		}
		if (n == 0 && ++stalls > 1000000)
			abort(); /* no progress: a stuck pause */
	}
	int e = http_parse_error(&s.hp);
	if (e && e != 400 && e != 414 && e != 417 && e != 431)
		abort();
	/* A failure says why, in a sentence the error answer can carry as is. */
	const char *why = http_parse_error_msg(&s.hp);
	if (!e != !why || (why && (!*why || strpbrk(why, "<>&\"'"))))
		abort();
	/* A failed parser stays failed and consumes nothing. */
	if (e && http_parse_feed(&s.hp, "GET / HTTP/1.1\r\n\r\n", 18) != 0)
		abort();
	return 0;
}
