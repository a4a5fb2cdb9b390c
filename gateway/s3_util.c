/*
 * s3_util.c — the S3 handlers' small stateless helpers (s3_util.h). Owns
 * nothing; knows no request and no meta call.
 */
#include "gateway/s3_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "gateway/s3_acl.h"

ProtobufCMessage *s3u_copy_msg(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		return NULL;
	protobuf_c_message_pack(m, b);
	ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, len, b);
	free(b);
	return c;
}

void s3u_free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

void *s3u_keep_sub(bool own, void *field)
{
	ProtobufCMessage *m, *none = NULL;
	memcpy(&m, field, sizeof(m));   /* any message pointer field */
	if (!m || !own)
		return m ? s3u_copy_msg(m) : NULL;
	memcpy(field, &none, sizeof(none));
	return m;
}

void s3u_copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

uint64_t s3u_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Two decimal digits of v (< 100) at p. */
static char *put2(char *p, unsigned v)
{
	p[0] = (char)('0' + v / 10);
	p[1] = (char)('0' + v % 10);
	return p + 2;
}

/* gmtime_r and strftime, which every GET's Last-Modified paid (0.9 % of a
 * GET 4 KiB's CPU, issue 19), by hand: the civil date of a day count
 * (Hinnant's days_from_civil inverted), for any year a uint64 of ms
 * reaches up to 9999; later ones answer as strftime would not matter. */
void s3u_http_date(uint64_t ms, char out[40])
{
	static const char wd[7][4] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
	static const char mn[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	uint64_t secs = ms / 1000, days = secs / 86400;
	unsigned sod = (unsigned)(secs % 86400);
	if (days > 2932896) {   /* past 9999-12-31: what libc would print is no date S3 has */
		time_t t = (time_t)secs;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		return;
	}
	uint64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	unsigned d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	unsigned m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	unsigned y = (unsigned)(yoe + era * 400 + (m <= 2));
	char *p = out;
	memcpy(p, wd[days % 7], 3);
	p += 3;
	*p++ = ',';
	*p++ = ' ';
	p = put2(p, d);
	*p++ = ' ';
	memcpy(p, mn[m - 1], 3);
	p += 3;
	*p++ = ' ';
	p = put2(p, y / 100);
	p = put2(p, y % 100);
	*p++ = ' ';
	p = put2(p, sod / 3600);
	*p++ = ':';
	p = put2(p, sod / 60 % 60);
	*p++ = ':';
	p = put2(p, sod % 60);
	memcpy(p, " GMT", 5);
}

void s3u_iso_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%03uZ", (unsigned)(ms % 1000));
}

const struct sigv4_header *s3u_hdr(struct s3_call *c, const char *name)
{
	return http_request_header(s3_call_http(c), name);
}

char *s3u_hdr_str(struct s3_call *c, const char *name, char *buf, size_t cap)
{
	const struct sigv4_header *h = s3u_hdr(c, name);
	if (!h)
		return NULL;
	size_t n = h->value_len < cap - 1 ? h->value_len : cap - 1;
	memcpy(buf, h->value, n);
	buf[n] = 0;
	return buf;
}

const char *s3u_qval(const struct s3_req *r, const char *name)
{
	const struct s3_qparam *q = s3_req_query(r, name);
	return q && q->has_value ? q->value : NULL;
}

long s3u_qnum(const struct s3_req *r, const char *name, long def)
{
	const char *v = s3u_qval(r, name);
	if (!v)
		return def;
	char *end;
	long n = strtol(v, &end, 10);
	return (!*v || *end || n < 0) ? -1 : n;
}

bool s3u_upload_id_ok(const struct s3_req *r)
{
	if (!r->upload_id || r->upload_id_len != 16)
		return false;
	for (size_t i = 0; i < 16; i++) {
		char ch = r->upload_id[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
	}
	return true;
}

void s3u_owner_elems(struct xml_w *w, const char *tag, const char *owner)
{
	char id[S3_ID_HEX + 1];
	xml_open(w, tag);
	if (owner && *owner) {
		s3_acl_user_id_hex(owner, id);
		xml_elem(w, "ID", id);
		xml_elem(w, "DisplayName", owner);
	} else {
		/* Written anonymously (a public-read-write bucket): S3's
		 * anonymous principal. */
		xml_elem(w, "ID", "65a011a29cdf8ec533ec3d1ccaae921c");
		xml_elem(w, "DisplayName", "anonymous");
	}
	xml_close(w);
}

enum s3_err s3u_body_size(struct s3_call *c, bool need_length, uint64_t *size)
{
	const struct http_request *hr = s3_call_http(c);
	char num[24];
	*size = hr->content_length;
	if (s3u_hdr_str(c, "x-amz-decoded-content-length", num, sizeof(num))) {
		char *end;
		*size = strtoull(num, &end, 10);
		if (!num[0] || *end)
			return S3E_InvalidArgument;
	} else if (!hr->has_content_length && (need_length || hr->has_body)) {
		return S3E_MissingContentLength;
	}
	return S3E_OK;
}

enum s3_err s3u_data_put_err(int status, const char **msg)
{
	*msg = NULL;
	if (status == -EMSGSIZE)
		return S3E_IncompleteBody;
	if (status == IOL_EUNAVAILABLE) {
		*msg = "Not enough storage nodes reachable to store the object";
		return S3E_ServiceUnavailable;
	}
	return S3E_InternalError;
}
