/*
 * s3_lock_parse.c — object lock documents and dates (s3_lock_parse.h).
 *
 * On xml_doc.h's reader (bounded depth and text, no DOCTYPE), a table per
 * document of the leaf paths it reads, each into a slot that may be
 * filled once. Unknown elements are ignored, as S3 does; text too long
 * for a slot is an error only in a leaf read.
 *
 * Owns nothing beyond one parse. Pure; any thread.
 */
#include "gateway/s3_lock_parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/xml_doc.h"

#define DEPTH_MAX 6
#define TEXT_MAX 64            /* the longest value read is a date */
#define SLOTS 4

/* One document: the leaves it reads, each into a slot filled once. */
struct lp {
	struct xml_doc d;
	const char *root;
	const char *const *leaves; /* full paths, "Root/A/B", one per slot */
	size_t n_leaves;
	bool seen[SLOTS];
	char val[SLOTS][TEXT_MAX + 1];
	size_t val_len[SLOTS];
	unsigned rules;            /* <Rule> elements (ObjectLockConfiguration) */
};

static void on_start(struct xml_doc *d)
{
	struct lp *l = d->ud;
	if (d->depth == 1 && strcmp(d->path[0], l->root) != 0)
		xml_doc_stop(d, -EBADMSG);
	else if (d->depth == 2 && !strcmp(d->path[1], "Rule"))
		l->rules++;
}

static void on_end(struct xml_doc *d)
{
	struct lp *l = d->ud;
	for (size_t i = 0; i < l->n_leaves; i++) {
		if (!xml_doc_at(d, l->leaves[i]))
			continue;
		if (l->seen[i] || d->text_over) {
			xml_doc_stop(d, -EBADMSG);   /* twice, or a value no field takes */
			return;
		}
		l->seen[i] = true;
		memcpy(l->val[i], d->text, d->text_len + 1);
		l->val_len[i] = d->text_len;
	}
}

static int run(struct lp *l, const char *body, size_t len, size_t max_len)
{
	l->d = (struct xml_doc){ .max_depth = DEPTH_MAX, .text_max = TEXT_MAX,
				 .long_text_ok = true, .on_start = on_start, .on_end = on_end,
				 .ud = l };
	return xml_doc_parse(&l->d, body, len, max_len);
}

/* ------------------------------------------------------------ values */

int s3_lock_mode_parse(const char *s, size_t n)
{
	if (n == 10 && !memcmp(s, "GOVERNANCE", 10))
		return S3_LOCK_GOVERNANCE;
	if (n == 10 && !memcmp(s, "COMPLIANCE", 10))
		return S3_LOCK_COMPLIANCE;
	return -1;
}

const char *s3_lock_mode_name(int mode)
{
	return mode == S3_LOCK_GOVERNANCE ? "GOVERNANCE" : mode == S3_LOCK_COMPLIANCE ? "COMPLIANCE" : "";
}

/* n digits at s[*i] as a number; false when not all digits. */
static bool digits(const char *s, size_t len, size_t *i, int n, int *out)
{
	int v = 0;
	for (int k = 0; k < n; k++, (*i)++) {
		if (*i >= len || s[*i] < '0' || s[*i] > '9')
			return false;
		v = v * 10 + (s[*i] - '0');
	}
	*out = v;
	return true;
}

static bool lit(const char *s, size_t len, size_t *i, char c)
{
	if (*i >= len || s[*i] != c)
		return false;
	(*i)++;
	return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

int s3_lock_date_parse(const char *s, size_t len, uint64_t *ms)
{
	size_t i = 0;
	int y, mo, d, h = 0, mi = 0, se = 0, frac_ms = 0;
	if (!digits(s, len, &i, 4, &y) || !lit(s, len, &i, '-') || !digits(s, len, &i, 2, &mo) ||
	    !lit(s, len, &i, '-') || !digits(s, len, &i, 2, &d))
		return -EINVAL;
	int64_t off_min = 0;
	if (i < len) {
		if (!lit(s, len, &i, 'T') || !digits(s, len, &i, 2, &h) || !lit(s, len, &i, ':') ||
		    !digits(s, len, &i, 2, &mi) || !lit(s, len, &i, ':') || !digits(s, len, &i, 2, &se))
			return -EINVAL;
		if (i < len && s[i] == '.') {
			i++;
			size_t f0 = i;
			int scale = 100;
			while (i < len && s[i] >= '0' && s[i] <= '9') {
				frac_ms += scale * (s[i] - '0');
				scale /= 10;
				i++;
			}
			if (i == f0 || i - f0 > 9)
				return -EINVAL;
		}
		if (lit(s, len, &i, 'Z')) {
			/* UTC */
		} else if (i < len && (s[i] == '+' || s[i] == '-')) {
			int sign = s[i] == '-' ? -1 : 1, oh, om;
			i++;
			if (!digits(s, len, &i, 2, &oh) || !lit(s, len, &i, ':') ||
			    !digits(s, len, &i, 2, &om) || oh > 23 || om > 59)
				return -EINVAL;
			off_min = sign * (oh * 60 + om);
		} else {
			return -EINVAL;
		}
		if (i != len)
			return -EINVAL;
	}
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
	    mi > 59 || se > 59)
		return -EINVAL;
	int64_t secs = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 +
		       se - off_min * 60;
	if (secs < 0)
		return -EINVAL;
	*ms = (uint64_t)secs * 1000 + (uint64_t)frac_ms;
	return 0;
}

/* A positive decimal integer up to max; -1 otherwise. */
static long pos_int(const char *s, size_t n, long max)
{
	if (n == 0 || n > 9)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= max ? v : -1;
}

/* ------------------------------------------------------------ documents */

int s3_lock_parse_config(const char *body, size_t len, size_t max_len, struct s3_lock_config *c)
{
	static const char *const leaves[] = {
		"ObjectLockConfiguration/ObjectLockEnabled",
		"ObjectLockConfiguration/Rule/DefaultRetention/Mode",
		"ObjectLockConfiguration/Rule/DefaultRetention/Days",
		"ObjectLockConfiguration/Rule/DefaultRetention/Years",
	};
	memset(c, 0, sizeof(*c));
	struct lp l = { .root = "ObjectLockConfiguration", .leaves = leaves, .n_leaves = 4 };
	int rc = run(&l, body, len, max_len);
	if (rc)
		return rc;
	if (!l.seen[0] || strcmp(l.val[0], "Enabled") != 0 || l.rules > 1)
		return -EBADMSG;
	c->enabled = true;
	c->has_rule = l.rules == 1;
	if (!c->has_rule)
		return l.seen[1] || l.seen[2] || l.seen[3] ? -EBADMSG : 0;
	if (!l.seen[1] || l.seen[2] == l.seen[3])
		return -EBADMSG;
	c->mode = s3_lock_mode_parse(l.val[1], l.val_len[1]);
	if (c->mode < 0)
		return -EBADMSG;   /* S3: MalformedXML for an unknown Mode here */
	long v = l.seen[2] ? pos_int(l.val[2], l.val_len[2], 36500)
			   : pos_int(l.val[3], l.val_len[3], 100);
	if (v < 0)
		return -EINVAL;
	if (l.seen[2])
		c->days = (uint32_t)v;
	else
		c->years = (uint32_t)v;
	return 0;
}

int s3_lock_parse_retention(const char *body, size_t len, size_t max_len, int *mode,
			    uint64_t *until_ms)
{
	static const char *const leaves[] = { "Retention/Mode", "Retention/RetainUntilDate" };
	struct lp l = { .root = "Retention", .leaves = leaves, .n_leaves = 2 };
	*mode = S3_LOCK_NONE;
	*until_ms = 0;
	int rc = run(&l, body, len, max_len);
	if (rc)
		return rc;
	if (l.seen[0] != l.seen[1])
		return -EBADMSG;
	if (!l.seen[0])
		return 0;
	int m = s3_lock_mode_parse(l.val[0], l.val_len[0]);
	if (m < 0 || s3_lock_date_parse(l.val[1], l.val_len[1], until_ms))
		return -EINVAL;
	*mode = m;
	return 0;
}

int s3_lock_parse_legal_hold(const char *body, size_t len, size_t max_len, bool *on)
{
	static const char *const leaves[] = { "LegalHold/Status" };
	struct lp l = { .root = "LegalHold", .leaves = leaves, .n_leaves = 1 };
	int rc = run(&l, body, len, max_len);
	if (rc)
		return rc;
	if (!l.seen[0])
		return -EBADMSG;
	if (!strcmp(l.val[0], "ON"))
		*on = true;
	else if (!strcmp(l.val[0], "OFF"))
		*on = false;
	else
		return -EBADMSG;
	return 0;
}
