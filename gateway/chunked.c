/*
 * chunked.c — aws-chunked decoding. See chunked.h.
 *
 * Framing lines (chunk headers, the CRLF after data, trailer lines) are
 * gathered byte by byte into a bounded line buffer; chunk data moves in
 * bulk, hashed (for the signature) and handed on without copying.
 *
 * Owns nothing but the decoder state the caller holds; allocates nothing.
 * Does not check the payload digest, Content-MD5 or the additional
 * checksum of the whole body (s3_server does), nor touch a socket.
 */
#include "gateway/chunked.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { S_SIZE_LINE, S_DATA, S_DATA_END, S_TRAILER, S_DONE };

int chunked_init(struct chunked_dec *d, const uint8_t key[32], const struct sigv4_auth *auth,
		 const char *seed_sig, bool trailer)
{
	memset(d, 0, offsetof(struct chunked_dec, line));
	d->line_len = d->tbuf_len = d->n_trailers = 0;
	d->sha = NULL; /* beyond the memset: the buffers are not cleared */
	d->state = S_SIZE_LINE;
	d->trailer_allowed = trailer;
	if (key) {
		d->signed_chunks = true;
		memcpy(d->key, key, 32);
		d->auth = auth;
		snprintf(d->prev_sig, sizeof(d->prev_sig), "%s", seed_sig);
		d->sha = hash_stream_new(HASH_SHA256);
		if (!d->sha)
			return -ENOMEM;
	}
	return 0;
}

void chunked_free(struct chunked_dec *d)
{
	hash_stream_free(d->sha);
	d->sha = NULL;
	explicit_bzero(d->key, sizeof(d->key));
}

static int fail(struct chunked_dec *d, int err)
{
	if (!d->err)
		d->err = err;
	return d->err;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return false;
	return true;
}

/* "<hex>[;chunk-signature=<sig>]" in d->line. */
static int parse_size_line(struct chunked_dec *d)
{
	const char *l = d->line;
	size_t n = d->line_len, i = 0;
	uint64_t size = 0;
	for (; i < n && hexval(l[i]) >= 0; i++) {
		if (i >= 16)
			return fail(d, CHUNKED_EFRAMING);
		size = size << 4 | (uint64_t)hexval(l[i]);
	}
	if (i == 0)
		return fail(d, CHUNKED_EFRAMING);
	if (size > CHUNKED_MAX_CHUNK)
		return fail(d, CHUNKED_ETOOBIG);
	d->claimed_sig[0] = '\0';
	if (i < n) {
		if (l[i] != ';')
			return fail(d, CHUNKED_EFRAMING);
		static const char ext[] = "chunk-signature=";
		const char *e = l + i + 1;
		size_t el = n - i - 1;
		if (el > sizeof(ext) - 1 && memcmp(e, ext, sizeof(ext) - 1) == 0) {
			if (!is_hex64(e + sizeof(ext) - 1, el - (sizeof(ext) - 1)))
				return fail(d, CHUNKED_EFRAMING);
			memcpy(d->claimed_sig, e + sizeof(ext) - 1, 64);
			d->claimed_sig[64] = '\0';
		} else if (d->signed_chunks) {
			return fail(d, CHUNKED_EFRAMING);
		}
	}
	if (d->signed_chunks && !d->claimed_sig[0])
		return fail(d, CHUNKED_EFRAMING);
	d->chunk_size = d->remaining = size;
	d->last_chunk = size == 0;
	return 0;
}

/* The current chunk's data is complete: check its signature. */
static int end_chunk(struct chunked_dec *d)
{
	if (!d->signed_chunks)
		return 0;
	uint8_t h[32];
	char sig[65];
	hash_stream_final(d->sha, h);
	sigv4_chunk_signature(d->key, d->auth, d->prev_sig, h, sig);
	if (!sigv4_equal(sig, d->claimed_sig))
		return fail(d, CHUNKED_ESIGNATURE);
	memcpy(d->prev_sig, sig, sizeof(sig));
	return 0;
}

/* One trailer line "name:value" (or the blank line ending them). */
static int trailer_line(struct chunked_dec *d)
{
	if (d->line_len == 0) { /* end of trailers */
		if (d->signed_chunks && d->trailer_allowed) {
			/* The last trailer is the signature over the others,
			 * each hashed as "name:value\n". */
			if (d->n_trailers == 0)
				return fail(d, CHUNKED_EFRAMING);
			struct chunked_trailer *ts = &d->trailers[d->n_trailers - 1];
			if (ts->name_len != 23 || strcasecmp(ts->name, "x-amz-trailer-signature") != 0 ||
			    !is_hex64(ts->value, ts->value_len))
				return fail(d, CHUNKED_EFRAMING);
			for (size_t i = 0; i + 1 < d->n_trailers; i++) {
				struct chunked_trailer *t = &d->trailers[i];
				hash_stream_update(d->sha, t->name, t->name_len);
				hash_stream_update(d->sha, ":", 1);
				hash_stream_update(d->sha, t->value, t->value_len);
				hash_stream_update(d->sha, "\n", 1);
			}
			uint8_t h[32];
			char sig[65];
			hash_stream_final(d->sha, h);
			sigv4_trailer_signature(d->key, d->auth, d->prev_sig, h, sig);
			if (!sigv4_equal(sig, ts->value))
				return fail(d, CHUNKED_ESIGNATURE);
		}
		d->state = S_DONE;
		return 0;
	}
	if (!d->trailer_allowed)
		return fail(d, CHUNKED_EFRAMING);
	if (d->n_trailers == CHUNKED_MAX_TRAILERS)
		return fail(d, CHUNKED_ETOOBIG);
	const char *colon = memchr(d->line, ':', d->line_len);
	if (!colon || colon == d->line)
		return fail(d, CHUNKED_EFRAMING);
	size_t nl = (size_t)(colon - d->line);
	const char *v = colon + 1;
	size_t vl = d->line_len - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	if (nl + vl + 2 > sizeof(d->tbuf) - d->tbuf_len)
		return fail(d, CHUNKED_ETOOBIG);
	struct chunked_trailer *t = &d->trailers[d->n_trailers++];
	char *p = d->tbuf + d->tbuf_len;
	memcpy(p, d->line, nl);
	p[nl] = '\0';
	t->name = p;
	t->name_len = nl;
	memcpy(p + nl + 1, v, vl);
	p[nl + 1 + vl] = '\0';
	t->value = p + nl + 1;
	t->value_len = vl;
	d->tbuf_len += nl + vl + 2;
	return 0;
}

/* Gather a CRLF-terminated line; returns 1 when complete, 0 when more
 * input is needed (everything consumed), <0 on error. *i advances. */
static int gather_line(struct chunked_dec *d, const char *in, size_t len, size_t *i)
{
	while (*i < len) {
		char c = in[(*i)++];
		if (c == '\n') {
			if (d->line_len == 0 || d->line[d->line_len - 1] != '\r')
				return fail(d, CHUNKED_EFRAMING);
			d->line_len--; /* drop the CR */
			return 1;
		}
		if (d->line_len == sizeof(d->line))
			return fail(d, CHUNKED_ETOOBIG);
		d->line[d->line_len++] = c;
	}
	return 0;
}

ssize_t chunked_feed(struct chunked_dec *d, const char *in, size_t len, chunked_data_fn on_data,
		     void *ud)
{
	size_t i = 0;
	if (d->err)
		return d->err;
	while (i < len && d->state != S_DONE) {
		int rc;
		switch (d->state) {
		case S_SIZE_LINE:
		case S_DATA_END:
		case S_TRAILER:
			rc = gather_line(d, in, len, &i);
			if (rc < 0)
				return rc;
			if (rc == 0)
				return (ssize_t)i;
			if (d->state == S_SIZE_LINE) {
				if ((rc = parse_size_line(d)))
					return rc;
				if (d->last_chunk) {
					if ((rc = end_chunk(d)))
						return rc;
					d->state = S_TRAILER;
				} else {
					d->state = S_DATA;
				}
			} else if (d->state == S_DATA_END) {
				if (d->line_len != 0)
					return fail(d, CHUNKED_EFRAMING);
				if ((rc = end_chunk(d)))
					return rc;
				d->state = S_SIZE_LINE;
			} else if ((rc = trailer_line(d))) {
				return rc;
			}
			d->line_len = 0;
			break;
		case S_DATA: {
			size_t n = len - i;
			if (n > d->remaining)
				n = (size_t)d->remaining;
			if (d->signed_chunks)
				hash_stream_update(d->sha, in + i, n);
			if (on_data)
				on_data(ud, in + i, n);
			d->decoded += n;
			d->remaining -= n;
			i += n;
			if (d->remaining == 0)
				d->state = S_DATA_END;
			break;
		}
		}
	}
	return (ssize_t)i;
}

bool chunked_done(const struct chunked_dec *d)
{
	return d->state == S_DONE && !d->err;
}

const struct chunked_trailer *chunked_trailer(const struct chunked_dec *d, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < d->n_trailers; i++)
		if (d->trailers[i].name_len == nl && strcasecmp(d->trailers[i].name, name) == 0)
			return &d->trailers[i];
	return NULL;
}
