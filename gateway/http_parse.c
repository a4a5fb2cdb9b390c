/*
 * http_parse.c — request parsing over http-parser 2.9. See http_parse.h.
 *
 * http-parser hands the target, names and values in fragments that may
 * span calls; each fragment is appended to the arena, and since fragments
 * of one field arrive back to back, the field's span is simply extended.
 * Limits are enforced in those callbacks (a nonzero return aborts the
 * parser; error_status remembers why).
 *
 * A repeated Content-Length: http-parser 2.9 refuses any second one; RFC
 * 9112 (section 6.3) lets a recipient take repeats of one value as that
 * value, and S3 does (rclone's presigned PUTs send the header twice, as
 * "Content-Length" and "content-length"). So the parser is let past a
 * repeat (cl_repeat), and on_headers_complete refuses repeats whose values
 * differ and keeps the first alone: the request has one Content-Length,
 * as it signed it. Transfer-Encoding with a Content-Length stays refused.
 *
 * Owns nothing but the caller's parser state and its head arena; no I/O,
 * no allocation.
 */
#include "gateway/http_parse.h"

#include <string.h>
#include <strings.h>

static struct http_parse *of(http_parser *p)
{
	return p->data;
}

_Static_assert(HTTP_HEAD_MAX == 16 * 1024 && HTTP_URL_MAX == 8 * 1024 && HTTP_MAX_HEADERS == 100,
	       "the failure messages below name these limits");

/* msg: a static sentence without XML special characters (it goes into
 * the error answer's Message as is). */
static int fail(struct http_parse *hp, int status, const char *msg)
{
	if (!hp->error_status) {
		hp->error_status = status;
		hp->error_msg = msg;
	}
	return -1;
}

static int append(struct http_parse *hp, const char *at, size_t len)
{
	if (len > HTTP_HEAD_MAX - hp->arena_len)
		return fail(hp, 431, "The request head is larger than 16 KiB.");
	memcpy(hp->arena + hp->arena_len, at, len);
	hp->arena_len += len;
	return 0;
}

static bool span_ieq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

static bool is_content_length(const struct sigv4_header *h)
{
	return span_ieq(h->name, h->name_len, "content-length");
}

/* The header being named, after a Content-Length was seen: if it is
 * another (so far), clear F_CONTENTLENGTH, which the parser sets again at
 * its value's first digit instead of failing on it; if it is not (its name
 * grew past "content-length" in a later fragment), the flag is the first
 * one's again. The last fragment before the value decides. */
static void cl_repeat(http_parser *p, const struct http_parse *hp)
{
	if (!hp->cl_first || hp->req.n_headers == hp->cl_first)
		return;
	if (is_content_length(&hp->req.headers[hp->req.n_headers - 1]))
		p->flags &= ~F_CONTENTLENGTH;
	else
		p->flags |= F_CONTENTLENGTH;
}

static int on_message_begin(http_parser *p)
{
	struct http_parse *hp = of(p);
	hp->arena_len = 0;
	hp->cl_first = 0;
	memset(&hp->req, 0, offsetof(struct http_request, headers));
	hp->req.n_headers = 0;
	hp->req.host = NULL;
	hp->in_value = false;
	hp->head_done = hp->msg_done = false;
	hp->begun = true;
	hp->body_bytes = 0;
	hp->req.target = hp->arena;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct http_parse *hp = of(p);
	if (len > HTTP_URL_MAX - hp->req.target_len)
		return fail(hp, 414, "The request target is longer than 8 KiB.");
	if (append(hp, at, len))
		return -1;
	hp->req.target_len += len;
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http_parse *hp = of(p);
	struct http_request *r = &hp->req;
	if (hp->in_value || r->n_headers == 0) {
		if (r->n_headers == HTTP_MAX_HEADERS)
			return fail(hp, 431, "The request has more than 100 headers.");
		struct sigv4_header *h = &r->headers[r->n_headers++];
		h->name = hp->arena + hp->arena_len;
		h->name_len = 0;
		h->value = "";
		h->value_len = 0;
		hp->in_value = false;
	}
	if (append(hp, at, len))
		return -1;
	r->headers[r->n_headers - 1].name_len += len;
	cl_repeat(p, hp);
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http_parse *hp = of(p);
	struct sigv4_header *h = &hp->req.headers[hp->req.n_headers - 1];
	if (!hp->in_value) {
		h->value = hp->arena + hp->arena_len;
		hp->in_value = true;
		if (!hp->cl_first && is_content_length(h))
			hp->cl_first = hp->req.n_headers;
	}
	if (append(hp, at, len))
		return -1;
	h->value_len += len;
	return 0;
}

const struct sigv4_header *http_request_header(const struct http_request *req, const char *name)
{
	for (size_t i = 0; i < req->n_headers; i++)
		if (span_ieq(req->headers[i].name, req->headers[i].name_len, name))
			return &req->headers[i];
	return NULL;
}

/* The Content-Length headers after the first (at index f): each must
 * carry its value byte for byte, and goes (-1 if one differs). */
static int cl_keep_first(struct http_request *r, size_t f)
{
	const struct sigv4_header *first = &r->headers[f];
	size_t n = f + 1;
	for (size_t i = f + 1; i < r->n_headers; i++) {
		const struct sigv4_header *h = &r->headers[i];
		if (!is_content_length(h)) {
			r->headers[n++] = *h;
			continue;
		}
		if (h->value_len != first->value_len || memcmp(h->value, first->value, h->value_len))
			return -1;
	}
	r->n_headers = n;
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	struct http_parse *hp = of(p);
	struct http_request *r = &hp->req;
	r->method = (enum http_method)p->method;
	r->method_name = http_method_str(r->method);
	r->http_major = p->http_major;
	r->http_minor = p->http_minor;
	r->path = r->target;
	r->path_len = r->target_len;
	const char *q = memchr(r->target, '?', r->target_len);
	if (q) {
		r->path_len = (size_t)(q - r->target);
		r->query = q + 1;
		r->query_len = r->target_len - r->path_len - 1;
	}
	for (size_t i = 0; i < r->n_headers; i++) {
		struct sigv4_header *h = &r->headers[i];
		/* No whitespace between a field name and its colon: RFC 9112
		 * (section 5.1) says 400, and http-parser 2.9 lets "Name :"
		 * through (as a name that would not match its header). */
		if (memchr(h->name, ' ', h->name_len) || memchr(h->name, '\t', h->name_len))
			return fail(hp, 400, "A header name has whitespace before its colon.");
		while (h->value_len && (h->value[h->value_len - 1] == ' ' ||
					h->value[h->value_len - 1] == '\t'))
			h->value_len--;
		if (span_ieq(h->name, h->name_len, "host")) {
			if (r->host) /* two Host headers: RFC 9112 says 400 */
				return fail(hp, 400, "The request has two Host headers.");
			r->host = h->value;
			r->host_len = h->value_len;
		} else if (span_ieq(h->name, h->name_len, "expect")) {
			if (!span_ieq(h->value, h->value_len, "100-continue"))
				return fail(hp, 417, "The only Expect served is 100-continue.");
			r->expect_continue = true;
		}
	}
	if (hp->cl_first && cl_keep_first(r, hp->cl_first - 1))
		return fail(hp, 400, "The request repeats Content-Length with different values.");
	if (r->http_major != 1)
		return fail(hp, 400, "Only HTTP/1.x is served on this port.");
	r->chunked = (p->flags & F_CHUNKED) != 0;
	r->has_content_length = (p->flags & F_CONTENTLENGTH) != 0;
	r->content_length = r->has_content_length && !r->chunked ? p->content_length : 0;
	r->has_body = r->chunked || r->content_length > 0;
	r->keep_alive = http_should_keep_alive(p) != 0;
	/* expect_continue stays set for a bodiless request (Content-Length:
	 * 0): clients that sent it (botocore) wait for the 100 and read the
	 * final response as the answer to the NEXT request otherwise — a
	 * keep-alive connection then stalls after a 0-byte PUT. */
	hp->head_done = true;
	hp->cb->on_head(hp->ud, r);
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct http_parse *hp = of(p);
	hp->body_bytes += len;
	hp->cb->on_body(hp->ud, at, len);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct http_parse *hp = of(p);
	hp->msg_done = true;
	hp->cb->on_complete(hp->ud);
	/* One message at a time: the next one waits for http_parse_next. */
	http_parse_pause(hp);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

void http_parse_init(struct http_parse *hp, const struct http_parse_cb *cb, void *ud)
{
	http_parser_init(&hp->p, HTTP_REQUEST);
	hp->p.data = hp;
	hp->cb = cb;
	hp->ud = ud;
	hp->error_status = 0;
	hp->error_msg = NULL;
	hp->arena_len = 0;
	hp->in_value = hp->head_done = hp->msg_done = hp->begun = false;
	hp->cl_first = 0;
	hp->body_bytes = 0;
	memset(&hp->req, 0, offsetof(struct http_request, headers));
	hp->req.n_headers = 0;
}

size_t http_parse_feed(struct http_parse *hp, const char *data, size_t len)
{
	if (hp->error_status || len == 0 || http_parse_paused(hp))
		return 0;
	size_t n = http_parser_execute(&hp->p, &settings, data, len);
	enum http_errno e = HTTP_PARSER_ERRNO(&hp->p);
	if (e != HPE_OK && e != HPE_PAUSED)
		fail(hp, 400, http_errno_description(e));
	return n;
}

void http_parse_pause(struct http_parse *hp)
{
	enum http_errno e = HTTP_PARSER_ERRNO(&hp->p);
	if (e == HPE_OK || e == HPE_PAUSED)
		http_parser_pause(&hp->p, 1);
}

void http_parse_unpause(struct http_parse *hp)
{
	/* Never across a message boundary: that is http_parse_next's. */
	if (hp->msg_done || HTTP_PARSER_ERRNO(&hp->p) != HPE_PAUSED)
		return;
	http_parser_pause(&hp->p, 0);
}

bool http_parse_paused(const struct http_parse *hp)
{
	return HTTP_PARSER_ERRNO(&hp->p) == HPE_PAUSED;
}

void http_parse_next(struct http_parse *hp)
{
	if (!hp->msg_done || hp->error_status)
		return;
	hp->msg_done = hp->head_done = hp->begun = false;
	hp->arena_len = 0;
	hp->req.n_headers = 0;
	if (HTTP_PARSER_ERRNO(&hp->p) == HPE_PAUSED)
		http_parser_pause(&hp->p, 0);
}

int http_parse_error(const struct http_parse *hp)
{
	return hp->error_status;
}

const char *http_parse_error_msg(const struct http_parse *hp)
{
	return hp->error_status ? hp->error_msg : NULL;
}

bool http_parse_in_head(const struct http_parse *hp)
{
	return hp->begun && !hp->head_done;
}
