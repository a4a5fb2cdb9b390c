/*
 * rpc_wire.c — the gRPC-over-HTTP/2 wire codec: length-prefixed message
 * parsing, grpc-timeout and grpc-message (percent-encoding) values.
 *
 * Pure functions of bytes: no I/O, no loop, no nghttp2, so each piece can
 * be unit-tested and fuzzed alone (tests/fuzz/fuzz_grpc_frame.c). Anything
 * here may see hostile input and validates it; nothing asserts on it.
 *
 * Message framing (gRPC PROTOCOL-HTTP2.md):
 *   Length-Prefixed-Message = Compressed-Flag(1) Message-Length(4, BE) Message
 * Each message is copied once, into a buf of its length taken as soon as
 * the prefix is known (rpc_buf_new: a large one is a recycled block, whose
 * pages are not faulted in again); prefixes may be split across DATA
 * frames.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/rpc_bufcache.h"
#include "common/rpc_internal.h"

void grpc_parser_init(struct grpc_parser *p, uint32_t max_bytes, unsigned max_msgs)
{
	memset(p, 0, sizeof(*p));
	p->max_bytes = max_bytes;
	p->max_msgs = (uint8_t)(max_msgs > 2 ? 2 : max_msgs);
}

void grpc_parser_reset(struct grpc_parser *p)
{
	buf_unref(p->cur);
	for (unsigned i = 0; i < p->nmsgs; i++)
		buf_unref(p->msgs[i]);
	grpc_parser_init(p, p->max_bytes, p->max_msgs);
}

bool grpc_parser_at_boundary(const struct grpc_parser *p)
{
	return p->hdr_len == 0 && p->cur == NULL;
}

int grpc_parser_feed(struct grpc_parser *p, const uint8_t *data, size_t len)
{
	while (len > 0) {
		if (!p->cur) {
			size_t n = GRPC_PREFIX_BYTES - p->hdr_len;
			if (n > len)
				n = len;
			memcpy(p->hdr + p->hdr_len, data, n);
			p->hdr_len = (uint8_t)(p->hdr_len + n);
			data += n;
			len -= n;
			if (p->hdr_len < GRPC_PREFIX_BYTES)
				return 0;
			/* No compression was negotiated: a set flag is a
			 * protocol error, not something to guess at. */
			if (p->hdr[0] != 0)
				return -EPROTO;
			if (p->nmsgs >= p->max_msgs)
				return -EPROTO;
			uint32_t mlen = (uint32_t)p->hdr[1] << 24 | (uint32_t)p->hdr[2] << 16 |
					(uint32_t)p->hdr[3] << 8 | p->hdr[4];
			if (mlen > p->max_bytes)
				return -EMSGSIZE;
			p->cur = rpc_buf_new(mlen);
			if (!p->cur)
				return -ENOMEM;
		}
		size_t need = p->cur->cap - p->cur->len;
		size_t n = need < len ? need : len;
		uint8_t *dst = p->cur->data + p->cur->len;
		if (dst != data) /* equal: the transport read them in place */
			memmove(dst, data, n);
		p->cur->len += n;
		data += n;
		len -= n;
		if (p->cur->len == p->cur->cap) {
			p->msgs[p->nmsgs++] = p->cur;
			p->cur = NULL;
			p->hdr_len = 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ grpc-timeout */

int grpc_timeout_parse(const uint8_t *v, size_t len, uint64_t *ms)
{
	if (len < 2 || len > 9)
		return -EINVAL;
	uint64_t n = 0;
	for (size_t i = 0; i + 1 < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	switch (v[len - 1]) {
	case 'H': *ms = n * 3600000u; break;
	case 'M': *ms = n * 60000u; break;
	case 'S': *ms = n * 1000u; break;
	case 'm': *ms = n; break;
	case 'u': *ms = (n + 999) / 1000; break;
	case 'n': *ms = (n + 999999) / 1000000; break;
	default: return -EINVAL;
	}
	return 0;
}

size_t grpc_timeout_format(char *out, uint32_t ms)
{
	/* At most 8 digits: switch to seconds for long deadlines. */
	if (ms <= 99999999u)
		return (size_t)snprintf(out, 16, "%um", ms);
	return (size_t)snprintf(out, 16, "%uS", (ms + 999) / 1000);
}

/* ------------------------------------------------------------ grpc-message */

static bool needs_escape(uint8_t c)
{
	return c < 0x20 || c > 0x7e || c == '%';
}

size_t grpc_message_encode(const char *in, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const uint8_t *s = (const uint8_t *)in; *s; s++) {
		if (needs_escape(*s)) {
			out[o++] = '%';
			out[o++] = hex[*s >> 4];
			out[o++] = hex[*s & 15];
		} else {
			out[o++] = (char)*s;
		}
	}
	out[o] = 0;
	return o;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t grpc_message_decode(const uint8_t *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return 0;
	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		int hi, lo;
		if (in[i] == '%' && i + 2 < len && (hi = hexval(in[i + 1])) >= 0 &&
		    (lo = hexval(in[i + 2])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[o++] = (char)in[i];
		}
	}
	out[o] = 0;
	return o;
}
