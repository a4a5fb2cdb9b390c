/*
 * list.c — S3 listing as range scans of the object table (semantics in
 * list.h).
 *
 * Cost: one seek to the start, one step per key returned, and one seek per
 * common prefix: after emitting a common prefix cp the cursor jumps to the
 * smallest key above every key that starts with cp (cp with its last
 * non-0xFF byte incremented), so a prefix holding a million keys costs one
 * seek, not a million steps. Memory: at most META_LIST_MAX_KEYS entries.
 */
#include "meta/list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

#define TOKEN_VERSION '1'

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* base64url without padding. out holds 4*ceil(n/3)+1. */
static void b64_encode(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = b64[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = b64[v & 63];
	}
	out[o] = 0;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* Returns decoded length, or -EINVAL. */
static long b64_decode(const char *in, uint8_t *out, size_t cap)
{
	size_t n = strlen(in), o = 0;
	if (n % 4 == 1)
		return -EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		size_t chunk = n - i < 4 ? n - i : 4;
		for (size_t j = 0; j < 4; j++) {
			int d = j < chunk ? b64_val(in[i + j]) : 0;
			if (d < 0)
				return -EINVAL;
			v = (v << 6) | (uint32_t)d;
		}
		size_t bytes = chunk - 1;
		if (o + bytes > cap)
			return -EINVAL;
		for (size_t j = 0; j < bytes; j++)
			out[o++] = (uint8_t)(v >> (16 - 8 * j));
	}
	return (long)o;
}

/* Byte-order compare of a[0..an) and b[0..bn). */
static int bcmp_len(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int add_entry(struct meta_list_page *p, const char *name, size_t len, bool is_prefix)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len);
	copy[len] = 0;
	p->entries[p->n++] = (struct meta_list_entry){ .name = copy, .name_len = len,
						       .is_prefix = is_prefix };
	return 0;
}

int meta_list(struct meta_state *s, const struct meta_list_req *req, struct meta_list_page *out)
{
	int rc = 0;
	struct meta_state_objiter *it = NULL;
	char marker[META_KEY_MAX + 1];
	size_t marker_len = 0;
	char succ[META_KEY_MAX + 1];
	memset(out, 0, sizeof(*out));

	const char *prefix = req->prefix ? req->prefix : "";
	const char *delim = req->delimiter ? req->delimiter : "";
	size_t plen = strlen(prefix), dlen = strlen(delim);
	unsigned max = req->max_keys > META_LIST_MAX_KEYS ? META_LIST_MAX_KEYS : req->max_keys;
	if (plen > META_KEY_MAX || dlen > META_KEY_MAX)
		return -EINVAL;
	if (req->token && req->token[0]) {
		uint8_t raw[1 + META_KEY_MAX];
		long n = b64_decode(req->token, raw, sizeof(raw));
		if (n < 1 || raw[0] != TOKEN_VERSION || memchr(raw + 1, 0, (size_t)n - 1))
			return -EINVAL;
		marker_len = (size_t)n - 1;
		memcpy(marker, raw + 1, marker_len);
	} else if (req->start_after) {
		marker_len = strlen(req->start_after);
		if (marker_len > META_KEY_MAX)
			return -EINVAL;
		memcpy(marker, req->start_after, marker_len);
	}
	marker[marker_len] = 0;
	if (max == 0)
		return 0;
	out->entries = calloc(max, sizeof(*out->entries));
	if (!out->entries)
		return -ENOMEM;
	rc = meta_state_objiter_new(s, req->bucket, &it);
	if (rc)
		return rc;

	/* Start at max(prefix, marker + "\0"): keys never hold a 0 byte, so
	 * the latter is the first key above the marker. */
	if (marker_len && bcmp_len(marker, marker_len + 1, prefix, plen) > 0)
		meta_state_objiter_seek(it, marker, marker_len + 1);
	else
		meta_state_objiter_seek(it, prefix, plen);

	while (meta_state_objiter_valid(it)) {
		size_t kn;
		const char *k = meta_state_objiter_key(it, &kn);
		if (kn < plen || memcmp(k, prefix, plen) != 0)
			break;   /* past the prefix range */
		const char *d = NULL;
		if (dlen)
			d = memmem(k + plen, kn - plen, delim, dlen);
		if (d) {
			size_t cn = (size_t)(d - k) + dlen;
			bool skip = marker_len && bcmp_len(k, cn, marker, marker_len) <= 0;
			if (!skip) {
				if (out->n == max) {
					out->truncated = true;
					break;
				}
				rc = add_entry(out, k, cn, true);
				if (rc)
					goto out_it;
			}
			/* Jump past every key under cp. */
			memcpy(succ, k, cn);
			while (cn > 0 && (uint8_t)succ[cn - 1] == 0xff)
				cn--;
			if (cn == 0)
				break;   /* nothing sorts above */
			succ[cn - 1] = (char)((uint8_t)succ[cn - 1] + 1);
			meta_state_objiter_seek(it, succ, cn);
			continue;
		}
		if (out->n == max) {
			out->truncated = true;
			break;
		}
		rc = add_entry(out, k, kn, false);
		if (rc)
			goto out_it;
		if (req->want_records) {
			rc = meta_state_objiter_record(it, &out->entries[out->n - 1].rec);
			if (rc)
				goto out_it;
		}
		meta_state_objiter_next(it);
	}
	rc = meta_state_objiter_error(it);
	if (rc == 0 && out->truncated) {
		const struct meta_list_entry *last = &out->entries[out->n - 1];
		uint8_t raw[1 + META_KEY_MAX];
		raw[0] = TOKEN_VERSION;
		memcpy(raw + 1, last->name, last->name_len);
		b64_encode(raw, 1 + last->name_len, out->next_token);
	}
out_it:
	meta_state_objiter_free(it);
	return rc;
}

void meta_list_page_free(struct meta_list_page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->entries[i].name);
		meta_state_free_msg(p->entries[i].rec);
	}
	free(p->entries);
	memset(p, 0, sizeof(*p));
}
