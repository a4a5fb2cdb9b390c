/*
 * list_token.c — the ListObjectsV2 continuation token: the last key a
 * page listed, versioned and base64url-encoded (list.h). Client-side and
 * member-side code both use it (a listing that walks key ranges decodes
 * the token in the client), so it lives apart from the state scans in
 * list.c. Pure.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "meta/list.h"

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

void meta_list_token_encode(const char *name, size_t len, char *out)
{
	uint8_t raw[1 + META_KEY_MAX];
	if (len > META_KEY_MAX)
		len = META_KEY_MAX;
	raw[0] = TOKEN_VERSION;
	memcpy(raw + 1, name, len);
	b64_encode(raw, 1 + len, out);
}

long meta_list_token_decode(const char *token, char *out, size_t cap)
{
	uint8_t raw[1 + META_KEY_MAX];
	long n = b64_decode(token, raw, sizeof(raw));
	if (n < 1 || raw[0] != TOKEN_VERSION || memchr(raw + 1, 0, (size_t)n - 1) ||
	    (size_t)n > cap)
		return -EINVAL;
	memcpy(out, raw + 1, (size_t)n - 1);
	out[n - 1] = 0;
	return n - 1;
}
