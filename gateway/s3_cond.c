/*
 * s3_cond.c — evaluation of S3 conditional headers. See s3_cond.h.
 *
 * Dates are parsed by hand (sscanf numbers and a month table), not with
 * strptime: no locale, no timezone state.
 *
 * Owns nothing; never answers a request (s3_cond_ops does).
 */
#include "gateway/s3_cond.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void take(const struct http_request *hr, const char *name, const char **v, size_t *n)
{
	const struct sigv4_header *h = http_request_header(hr, name);
	*v = h ? h->value : NULL;
	*n = h ? h->value_len : 0;
}

void s3_cond_in_from(struct s3_cond_in *in, const struct http_request *hr)
{
	take(hr, "if-match", &in->if_match, &in->if_match_len);
	take(hr, "if-none-match", &in->if_none_match, &in->if_none_match_len);
	take(hr, "if-modified-since", &in->if_modified_since, &in->if_modified_since_len);
	take(hr, "if-unmodified-since", &in->if_unmodified_since, &in->if_unmodified_since_len);
}

bool s3_cond_any(const struct s3_cond_in *in)
{
	return in->if_match || in->if_none_match || in->if_modified_since || in->if_unmodified_since;
}

/* ------------------------------------------------------------ dates */

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int month_of(const char *s)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	for (int i = 0; i < 12; i++)
		if (strncasecmp(s, names + 3 * i, 3) == 0 && s[3] == 0)
			return i + 1;
	return 0;
}

int s3_cond_parse_date(const char *s, size_t len, int64_t *out)
{
	char b[64], mon[8] = "", tz[8] = "", wd[8];
	int d = 0, y = 0, hh = 0, mm = 0, ss = 0, used = 0;
	if (len == 0 || len >= sizeof(b))
		return -EINVAL;
	memcpy(b, s, len);
	b[len] = 0;
	const char *comma = strchr(b, ',');
	bool ok = false;
	if (comma && comma - b == 3) {
		/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
		ok = sscanf(comma + 1, " %2d %3s %4d %2d:%2d:%2d %3s%n", &d, mon, &y, &hh, &mm, &ss, tz,
			    &used) == 7;
	} else if (comma) {
		/* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
		ok = sscanf(comma + 1, " %2d-%3[A-Za-z]-%2d %2d:%2d:%2d %3s%n", &d, mon, &y, &hh, &mm,
			    &ss, tz, &used) == 7;
		y += y < 70 ? 2000 : 1900;
		used += (int)(comma + 1 - b);
		comma = NULL;
	} else {
		/* asctime: Sun Nov  6 08:49:37 1994 */
		ok = sscanf(b, "%3s %3s %2d %2d:%2d:%2d %4d%n", wd, mon, &d, &hh, &mm, &ss, &y, &used) == 7;
		snprintf(tz, sizeof(tz), "GMT");
	}
	if (comma)
		used += (int)(comma + 1 - b);
	int m = month_of(mon);
	if (!ok || (size_t)used != len || !m || strcmp(tz, "GMT") != 0 || d < 1 || d > 31 ||
	    hh > 23 || mm > 59 || ss > 60 || y < 1970 || hh < 0 || mm < 0 || ss < 0)
		return -EINVAL;
	*out = days_from_civil(y, (unsigned)m, (unsigned)d) * 86400 + hh * 3600 + mm * 60 + ss;
	return 0;
}

/* ------------------------------------------------------------ entity tags */

bool s3_cond_etag_match(const char *s, size_t len, const char *etag)
{
	size_t el = etag ? strlen(etag) : 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		if (i == len)
			break;
		if (s[i] == '*')
			return etag != NULL;
		if (len - i >= 2 && s[i] == 'W' && s[i + 1] == '/')
			i += 2; /* weak comparison, as S3 */
		size_t start = i, end;
		if (i < len && s[i] == '"') {
			start = ++i;
			while (i < len && s[i] != '"')
				i++;
			end = i;
			if (i < len)
				i++;
		} else {
			/* Unquoted, as some clients send: up to the next comma. */
			while (i < len && s[i] != ',' && s[i] != ' ')
				i++;
			end = i;
		}
		if (etag && end - start == el && memcmp(s + start, etag, el) == 0)
			return true;
	}
	return false;
}

bool s3_cond_if_range(const char *v, size_t len, const char *etag, uint64_t mtime_ms)
{
	while (len && (*v == ' ' || *v == '\t'))
		v++, len--;
	while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
		len--;
	size_t el = etag ? strlen(etag) : 0;
	if (len == 0 || (len >= 2 && v[0] == 'W' && v[1] == '/'))
		return false;   /* If-Range needs a strong validator */
	if (v[0] == '"')
		return el && len == el + 2 && v[len - 1] == '"' && memcmp(v + 1, etag, el) == 0;
	int64_t t;
	if (s3_cond_parse_date(v, len, &t) == 0)
		return (int64_t)(mtime_ms / 1000) == t;
	return el && len == el && memcmp(v, etag, el) == 0;
}

/* ------------------------------------------------------------ evaluation */

/* Whether mtime is after the header's date; -1 when the date is invalid. */
static int modified_since(const char *v, size_t n, uint64_t mtime_ms)
{
	int64_t t;
	if (s3_cond_parse_date(v, n, &t))
		return -1;
	return (int64_t)(mtime_ms / 1000) > t;
}

enum s3_cond_res s3_cond_get(const struct s3_cond_in *in, const char *etag, uint64_t mtime_ms)
{
	if (in->if_match) {
		if (!s3_cond_etag_match(in->if_match, in->if_match_len, etag))
			return S3_COND_FAILED;
	} else if (in->if_unmodified_since) {
		if (modified_since(in->if_unmodified_since, in->if_unmodified_since_len, mtime_ms) == 1)
			return S3_COND_FAILED;
	}
	if (in->if_none_match) {
		if (s3_cond_etag_match(in->if_none_match, in->if_none_match_len, etag))
			return S3_COND_NOT_MODIFIED;
	} else if (in->if_modified_since) {
		if (modified_since(in->if_modified_since, in->if_modified_since_len, mtime_ms) == 0)
			return S3_COND_NOT_MODIFIED;
	}
	return S3_COND_PASS;
}

enum s3_cond_res s3_cond_put(const struct s3_cond_in *in, const char *etag)
{
	if (in->if_none_match) {
		if (in->if_none_match_len != 1 || in->if_none_match[0] != '*')
			return S3_COND_UNSUPPORTED;
		if (etag)
			return S3_COND_FAILED;
	}
	if (in->if_match) {
		if (!etag)
			return S3_COND_NO_OBJECT;
		if (!s3_cond_etag_match(in->if_match, in->if_match_len, etag))
			return S3_COND_FAILED;
	}
	return S3_COND_PASS;
}
