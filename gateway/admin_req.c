/*
 * admin_req.c — see admin_req.h. Routes are matched by hand on path
 * segments (no regex, nothing compiled per request); bodies go through
 * common/json with duplicate keys refused; tokens are HMAC-SHA256
 * (common/hash) over their visible fields.
 */
#include "gateway/admin_req.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/hash.h"
#include "common/json.h"
#include "common/sigv4.h"

/* ------------------------------------------------------------ routes */

/* Next path segment of p[0..n) at *pos (after a '/'): its span, and *pos
 * past it. false at the end. */
static bool segment(const char *p, size_t n, size_t *pos, const char **s, size_t *sl)
{
	if (*pos >= n || p[*pos] != '/')
		return false;
	size_t b = ++*pos;
	while (*pos < n && p[*pos] != '/')
		(*pos)++;
	*s = p + b;
	*sl = *pos - b;
	return true;
}

static bool eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decode s into out (cap bytes with the NUL). 0 or -EINVAL (bad
 * escape, too long, NUL or control bytes, '/'). */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		if (c == '%') {
			int h = i + 2 < n ? unhex(s[i + 1]) : -1, l = i + 2 < n ? unhex(s[i + 2]) : -1;
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f || c == '/' || o + 1 >= cap)
			return -EINVAL;
		out[o++] = (char)c;
	}
	if (!o)
		return -EINVAL;
	out[o] = 0;
	return 0;
}

/* A decimal 0..max from s[0..n): 0 and *v, else -EINVAL. */
static int dec_u32(const char *s, size_t n, uint32_t max, uint32_t *v)
{
	uint64_t x = 0;
	if (n == 0 || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (x > max)
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
}

static int want(const char *method, const char *m1, const char *m2)
{
	if (!strcmp(method, m1) || (m2 && !strcmp(method, m2)))
		return 0;
	return -EOPNOTSUPP;
}

int admin_route_parse(const char *method, const char *path, size_t n, struct admin_route *r)
{
	memset(r, 0, sizeof(*r));
	const char *m = !strcmp(method, "HEAD") ? "GET" : method;
	if (eq(path, n, "/")) {
		r->id = ADMIN_R_ROOT;
		return want(m, "GET", NULL);
	}
	if (eq(path, n, "/console")) {   /* redirected like / */
		r->id = ADMIN_R_ROOT;
		return want(m, "GET", NULL);
	}
	if (n >= 9 && !memcmp(path, "/console/", 9)) {
		r->id = ADMIN_R_CONSOLE;
		r->file = path + 9;
		r->file_len = n - 9;
		return want(m, "GET", NULL);
	}
	size_t pos = 0, sl[5];
	const char *s[5];
	int k = 0;
	/* A trailing '/' names the same resource. */
	size_t len = n > 1 && path[n - 1] == '/' ? n - 1 : n;
	while (k < 5 && segment(path, len, &pos, &s[k], &sl[k]))
		k++;
	if (pos != len || k < 3 || !eq(s[0], sl[0], "api") || !eq(s[1], sl[1], "v1"))
		return -ENOENT;
	for (int i = 0; i < k; i++)
		if (!sl[i])
			return -ENOENT;
	const char *r0 = s[2];
	size_t l0 = sl[2];
	if (k == 3) {
		if (eq(r0, l0, "login")) {
			r->id = ADMIN_R_LOGIN;
			return want(m, "POST", NULL);
		}
		if (eq(r0, l0, "logout")) {
			r->id = ADMIN_R_LOGOUT;
			return want(m, "POST", NULL);
		}
		if (eq(r0, l0, "cluster")) {
			r->id = ADMIN_R_CLUSTER;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "osds")) {
			r->id = ADMIN_R_OSDS;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "pgs")) {
			r->id = ADMIN_R_PGS;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "buckets")) {
			r->id = ADMIN_R_BUCKETS;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "stats")) {
			r->id = ADMIN_R_STATS;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "gc")) {
			r->id = ADMIN_R_GC;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "scrub")) {
			r->id = ADMIN_R_SCRUB;
			return want(m, "GET", NULL);
		}
		if (eq(r0, l0, "members")) {
			r->id = ADMIN_R_MEMBER_ADD;
			return want(m, "POST", NULL);
		}
		if (eq(r0, l0, "users")) {
			r->id = !strcmp(m, "POST") ? ADMIN_R_USER_CREATE : ADMIN_R_USERS;
			return want(m, "GET", "POST");
		}
		return -ENOENT;
	}
	if (k == 5 && (eq(r0, l0, "users") || eq(r0, l0, "buckets")) && eq(s[4], sl[4], "quota")) {
		r->quota_user = eq(r0, l0, "users");
		r->id = !strcmp(m, "PUT") ? ADMIN_R_QUOTA_SET
			: !strcmp(m, "DELETE") ? ADMIN_R_QUOTA_CLEAR : ADMIN_R_QUOTA_GET;
		if (pct_decode(s[3], sl[3], r->name, sizeof(r->name)))
			return -EINVAL;
		return strcmp(m, "DELETE") ? want(m, "GET", "PUT") : 0;
	}
	if (k == 5 && eq(r0, l0, "users") && eq(s[4], sl[4], "keys")) {
		r->id = ADMIN_R_KEY_CREATE;
		if (pct_decode(s[3], sl[3], r->name, sizeof(r->name)))
			return -EINVAL;
		return want(m, "POST", NULL);
	}
	if (k == 4 && eq(r0, l0, "osds") && eq(s[3], sl[3], "expect")) {
		r->id = ADMIN_R_OSD_EXPECT;
		return want(m, "PUT", NULL);
	}
	if (k == 4 && (eq(r0, l0, "osds") || eq(r0, l0, "members"))) {
		bool osd = eq(r0, l0, "osds");
		r->id = osd ? ADMIN_R_OSD_RM : ADMIN_R_MEMBER_RM;
		uint64_t v = 0;
		if (sl[3] > 16)
			return -EINVAL;
		for (size_t i = 0; i < sl[3]; i++) {
			if (s[3][i] < '0' || s[3][i] > '9')
				return -EINVAL;
			v = v * 10 + (uint64_t)(s[3][i] - '0');
		}
		if (osd && v >= 0xFFFFFFFFull)   /* PLACE_NONE */
			return -EINVAL;
		if (!osd && (v == 0 || v > (UINT64_C(1) << 53)))
			return -EINVAL;
		if (osd)
			r->osd_id = (uint32_t)v;
		else
			r->member_id = v;
		return want(m, "DELETE", NULL);
	}
	if (k == 4 && eq(r0, l0, "keys")) {
		r->id = ADMIN_R_KEY_DELETE;
		if (pct_decode(s[3], sl[3], r->name, sizeof(r->name)))
			return -EINVAL;
		return want(m, "DELETE", NULL);
	}
	if (k == 5 && eq(r0, l0, "users") && eq(s[4], sl[4], "grants")) {
		r->id = !strcmp(m, "PUT") ? ADMIN_R_USER_GRANT_SET : ADMIN_R_USER_GRANTS;
		if (pct_decode(s[3], sl[3], r->name, sizeof(r->name)))
			return -EINVAL;
		return want(m, "GET", "PUT");
	}
	if (k == 4 && eq(r0, l0, "users")) {
		r->id = ADMIN_R_USER_DELETE;
		if (pct_decode(s[3], sl[3], r->name, sizeof(r->name)))
			return -EINVAL;
		return want(m, "DELETE", NULL);
	}
	/* osds/{id}/VERB */
	static const struct {
		const char *verb, *method;
		enum admin_route_id id;
	} osd_verbs[] = {
		{ "out", "POST", ADMIN_R_OSD_OUT },
		{ "in", "POST", ADMIN_R_OSD_IN },
		{ "bad-shards", "GET", ADMIN_R_OSD_BAD },
		{ "shards", "GET", ADMIN_R_OSD_SHARDS },
	};
	for (size_t i = 0; k == 5 && eq(r0, l0, "osds") && i < sizeof(osd_verbs) / sizeof(osd_verbs[0]);
	     i++) {
		if (!eq(s[4], sl[4], osd_verbs[i].verb))
			continue;
		r->id = osd_verbs[i].id;
		if (dec_u32(s[3], sl[3], 0xFFFFFFFEu, &r->osd_id))   /* below PLACE_NONE */
			return -EINVAL;
		return want(m, osd_verbs[i].method, NULL);
	}
	return -ENOENT;
}

static int parse_after(const char *s, size_t n, struct admin_shard_query *out)
{
	const char *c1 = memchr(s, ':', n);
	const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s)) : NULL;
	if (!c2 || dec_u32(s, (size_t)(c1 - s), UINT32_MAX - 1, &out->pg) ||
	    dec_u32(c1 + 1, (size_t)(c2 - c1 - 1), UINT32_MAX - 1, &out->shard))
		return -EINVAL;
	const char *h = c2 + 1;
	size_t hl = n - (size_t)(h - s);
	if (hl == 0 || hl % 2 || hl / 2 > ADMIN_OID_MAX || hash_unhex(h, hl / 2, out->oid))
		return -EINVAL;
	out->oid_len = hl / 2;
	out->have_after = true;
	return 0;
}

int admin_parse_shard_query(const char *q, size_t len, bool want_pg,
			    struct admin_shard_query *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	out->limit = 1000;
	bool seen_after = false, seen_limit = false, seen_pg = false;
	for (size_t i = 0; i < len;) {
		size_t end = i;
		while (end < len && q[end] != '&')
			end++;
		const char *p = q + i, *eqs = memchr(p, '=', end - i);
		size_t kl = eqs ? (size_t)(eqs - p) : end - i;
		const char *v = eqs ? eqs + 1 : p + kl;
		size_t vl = (size_t)(q + end - v);
		if (end == i) {
			/* an empty parameter ("a&&b"): nothing */
		} else if (eq(p, kl, "after") && !seen_after) {
			seen_after = true;
			if (parse_after(v, vl, out)) {
				*why = "after must be PG:SHARD:OBJECTHEX, as a page's next gives it";
				return -EINVAL;
			}
		} else if (eq(p, kl, "limit") && !seen_limit) {
			seen_limit = true;
			if (dec_u32(v, vl, 10000, &out->limit) || !out->limit) {
				*why = "limit must be a whole number 1..10000";
				return -EINVAL;
			}
		} else if (want_pg && eq(p, kl, "pg") && !seen_pg) {
			seen_pg = true;
			if (dec_u32(v, vl, UINT32_MAX - 1, &out->list_pg)) {
				*why = "pg must be a PG number";
				return -EINVAL;
			}
		} else {
			*why = want_pg ? "unknown or repeated parameter (pg, after and limit are taken)"
				       : "unknown or repeated parameter (after and limit are taken)";
			return -EINVAL;
		}
		i = end + 1;
	}
	if (want_pg && !seen_pg) {
		*why = "pg is required: the PG whose shards are listed";
		return -EINVAL;
	}
	if (want_pg && out->have_after && out->pg != out->list_pg) {
		*why = "after must name a shard of the PG listed";
		return -EINVAL;
	}
	return 0;
}

const char *admin_route_allow(const char *path, size_t path_len)
{
	struct admin_route r;
	static const char *const methods[] = { "GET", "POST", "PUT", "DELETE" };
	static __thread char allow[32];
	allow[0] = '\0';
	for (unsigned i = 0; i < 4; i++)
		if (admin_route_parse(methods[i], path, path_len, &r) == 0) {
			size_t n = strlen(allow);
			snprintf(allow + n, sizeof(allow) - n, "%s%s", n ? ", " : "", methods[i]);
		}
	return allow;
}

bool admin_etag_match(const char *v, size_t vl, const char *etag)
{
	size_t el = strlen(etag);
	for (size_t i = 0; i < vl;) {
		while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t j = i;
		while (j < vl && v[j] != ',')
			j++;
		size_t e = j;
		while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		const char *t = v + i;
		size_t tl = e - i;
		if (tl > 2 && t[0] == 'W' && t[1] == '/')
			t += 2, tl -= 2;
		if ((tl == 1 && t[0] == '*') || (tl == el && el && !memcmp(t, etag, el)))
			return true;
		i = j;
	}
	return false;
}

bool admin_user_name_ok(const char *s, size_t len)
{
	if (len < 1 || len > 64)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("+=,.@_-", c)))
			return false;
		if (!c)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ bodies */

static int parse_obj(const char *body, size_t len, struct json_doc **doc, const char **why)
{
	struct json_limits lim = { .max_bytes = ADMIN_BODY_MAX, .max_depth = 4,
				   .max_members = 16, .flags = JSON_REJECT_DUP_KEYS };
	struct json_error je = { 0 };
	int rc = json_parse(body, len, &lim, doc, &je);
	if (rc) {
		*why = rc == -E2BIG ? "body too large" : je.msg ? je.msg : "not JSON";
		return rc == -E2BIG ? -E2BIG : rc == -ENOMEM ? -ENOMEM : -EBADMSG;
	}
	if (json_root(*doc)->type != JSON_OBJECT) {
		json_free(*doc);
		*doc = NULL;
		*why = "the body must be a JSON object";
		return -EINVAL;
	}
	return 0;
}

/* A string member into out (cap with NUL): no NUL inside, 1..cap-1 bytes. */
static int take_str(const struct json_value *v, char *out, size_t cap)
{
	if (v->type != JSON_STRING || !v->u.str.len || v->u.str.len >= cap ||
	    memchr(v->u.str.s, 0, v->u.str.len))
		return -EINVAL;
	memcpy(out, v->u.str.s, v->u.str.len);
	out[v->u.str.len] = 0;
	return 0;
}

int admin_parse_login(const char *body, size_t len, struct admin_login *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		if (!strcmp(v->key, "access_key") && v->key_len == 10) {
			if (take_str(v, out->access_key, sizeof(out->access_key)))
				*why = "access_key must be a string of 1..128 bytes", rc = -EINVAL;
		} else if (!strcmp(v->key, "secret_key") && v->key_len == 10) {
			if (take_str(v, out->secret_key, sizeof(out->secret_key)))
				*why = "secret_key must be a string of 1..128 bytes", rc = -EINVAL;
		} else {
			*why = "unknown member (access_key and secret_key are expected)";
			rc = -EINVAL;
		}
	}
	if (!rc && (!out->access_key[0] || !out->secret_key[0]))
		*why = "access_key and secret_key are required", rc = -EINVAL;
	json_free(d);
	return rc;
}

int admin_parse_user_create(const char *body, size_t len, struct admin_user_create *out,
			    const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		if (!strcmp(v->key, "name") && v->key_len == 4) {
			if (take_str(v, out->name, sizeof(out->name)) ||
			    !admin_user_name_ok(out->name, strlen(out->name)))
				*why = "name must be 1..64 of A-Z a-z 0-9 + = , . @ _ -", rc = -EINVAL;
		} else if (!strcmp(v->key, "admin") && v->key_len == 5) {
			if (v->type != JSON_TRUE && v->type != JSON_FALSE)
				*why = "admin must be true or false", rc = -EINVAL;
			out->admin = v->type == JSON_TRUE;
		} else if (!strcmp(v->key, "access_key") && v->key_len == 10) {
			if (take_str(v, out->access_key, sizeof(out->access_key)))
				*why = "access_key must be a string of 1..128 bytes", rc = -EINVAL;
		} else if (!strcmp(v->key, "secret_key") && v->key_len == 10) {
			if (take_str(v, out->secret_key, sizeof(out->secret_key)))
				*why = "secret_key must be a string of 1..128 bytes", rc = -EINVAL;
		} else {
			*why = "unknown member (name, admin, access_key, secret_key are expected)";
			rc = -EINVAL;
		}
	}
	if (!rc && !out->name[0])
		*why = "name is required", rc = -EINVAL;
	if (!rc && !out->access_key[0] != !out->secret_key[0])
		*why = "give both access_key and secret_key, or neither", rc = -EINVAL;
	out->has_key = out->access_key[0] != 0;
	json_free(d);
	return rc;
}

int admin_parse_grant_set(const char *body, size_t len, struct admin_grant_set *out,
			  const char **why)
{
	static const char *const levels[] = { "none", "read", "write", "full" };
	memset(out, 0, sizeof(*out));
	out->level = -1;
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		if (!strcmp(v->key, "bucket") && v->key_len == 6) {
			if (take_str(v, out->bucket, sizeof(out->bucket)))
				*why = "bucket must be a string of 1..63 bytes", rc = -EINVAL;
		} else if (!strcmp(v->key, "level") && v->key_len == 5) {
			char lv[8];
			out->level = -1;
			if (!take_str(v, lv, sizeof(lv)))
				for (int i = 0; i < 4; i++)
					if (!strcmp(lv, levels[i]))
						out->level = i;
			if (out->level < 0)
				*why = "level must be \"read\", \"write\", \"full\" or \"none\"",
				rc = -EINVAL;
		} else {
			*why = "unknown member (bucket and level are expected)";
			rc = -EINVAL;
		}
	}
	if (!rc && (!out->bucket[0] || out->level < 0))
		*why = "bucket and level are required", rc = -EINVAL;
	json_free(d);
	return rc;
}

/* A whole number 0..2^53 (exact in a double, so any JSON client can
 * write it). */
static int take_count(const struct json_value *v, uint64_t *out)
{
	if (v->type != JSON_NUMBER || !v->u.num.is_int || v->u.num.i < 0 ||
	    v->u.num.i > (INT64_C(1) << 53))
		return -EINVAL;
	*out = (uint64_t)v->u.num.i;
	return 0;
}

int admin_parse_quota_set(const char *body, size_t len, struct admin_quota_set *out,
			  const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	bool any = false;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		if (!strcmp(v->key, "max_bytes") && v->key_len == 9) {
			if (take_count(v, &out->max_bytes))
				*why = "max_bytes must be a whole number 0..2^53", rc = -EINVAL;
		} else if (!strcmp(v->key, "max_objects") && v->key_len == 11) {
			if (take_count(v, &out->max_objects))
				*why = "max_objects must be a whole number 0..2^53", rc = -EINVAL;
		} else {
			*why = "unknown member (max_bytes and max_objects are expected)";
			rc = -EINVAL;
		}
		any = true;
	}
	if (!rc && !any)
		*why = "give max_bytes, max_objects or both", rc = -EINVAL;
	json_free(d);
	return rc;
}

int admin_parse_member_add(const char *body, size_t len, struct admin_member_add *out,
			   const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		if (!strcmp(v->key, "id") && v->key_len == 2) {
			if (take_count(v, &out->id) || !out->id)
				*why = "id must be a whole number 1..2^53", rc = -EINVAL;
		} else if (!strcmp(v->key, "address") && v->key_len == 7) {
			if (take_str(v, out->address, sizeof(out->address)))
				*why = "address must be a string of 1..63 bytes", rc = -EINVAL;
			for (const char *p = out->address; !rc && *p; p++)
				if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
					*why = "address must be HOST:PORT, printable, no space", rc = -EINVAL;
			if (!rc && !strchr(out->address, ':'))
				*why = "address must be HOST:PORT", rc = -EINVAL;
		} else {
			*why = "unknown member (id and address are expected)";
			rc = -EINVAL;
		}
	}
	if (!rc && (!out->id || !out->address[0]))
		*why = "id and address are required", rc = -EINVAL;
	json_free(d);
	return rc;
}

int admin_parse_expect_osds(const char *body, size_t len, struct admin_expect_osds *out,
			    const char **why)
{
	memset(out, 0, sizeof(*out));
	struct json_doc *d;
	int rc = parse_obj(body, len, &d, why);
	if (rc)
		return rc;
	rc = 0;
	bool any = false;
	for (const struct json_value *v = json_root(d)->u.list.first; v && !rc; v = v->next) {
		uint64_t n;
		if (!strcmp(v->key, "osds") && v->key_len == 4) {
			if (take_count(v, &n) || n > ADMIN_EXPECT_OSDS_MAX)
				*why = "osds must be a whole number 0..4096", rc = -EINVAL;
			else
				out->osds = (uint32_t)n;
			any = true;
		} else {
			*why = "unknown member (osds is expected)";
			rc = -EINVAL;
		}
	}
	if (!rc && !any)
		*why = "osds is required", rc = -EINVAL;
	json_free(d);
	return rc;
}

/* ------------------------------------------------------------ tokens */

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int admin_token_make(const uint8_t key[32], const char *access_key, uint64_t expires_s,
		     char out[ADMIN_TOKEN_MAX + 1])
{
	size_t al = strlen(access_key);
	if (al < 3 || al > ADMIN_KEY_MAX)
		return -EINVAL;
	for (size_t i = 0; i < al; i++)
		if (!key_char(access_key[i]))
			return -EINVAL;
	int n = snprintf(out, ADMIN_TOKEN_MAX + 1, "v1.%llu.", (unsigned long long)expires_s);
	hash_hex((const uint8_t *)access_key, al, out + n);
	n += (int)(2 * al);
	uint8_t mac[32];
	hash_hmac_sha256(key, 32, out, (size_t)n, mac);
	out[n++] = '.';
	hash_hex(mac, 32, out + n);
	n += 64;
	out[n] = 0;
	return n;
}

int admin_token_check(const uint8_t key[32], const char *tok, size_t len, uint64_t now_s,
		      char access_key[ADMIN_KEY_MAX + 1])
{
	if (len < 3 + 1 + 1 + 6 + 1 + 64 || len > ADMIN_TOKEN_MAX || memcmp(tok, "v1.", 3))
		return -EINVAL;
	size_t i = 3;
	uint64_t exp = 0;
	size_t digits = 0;
	while (i < len && tok[i] >= '0' && tok[i] <= '9' && digits < 19) {
		exp = exp * 10 + (uint64_t)(tok[i++] - '0');
		digits++;
	}
	if (!digits || i >= len || tok[i] != '.')
		return -EINVAL;
	size_t hb = ++i, body_end = len - 65;
	if (body_end <= hb || tok[body_end] != '.' || (body_end - hb) % 2 ||
	    (body_end - hb) / 2 > ADMIN_KEY_MAX || (body_end - hb) / 2 < 3)
		return -EINVAL;
	uint8_t mac[32];
	char want_hex[65], got_hex[65];
	hash_hmac_sha256(key, 32, tok, body_end, mac);
	hash_hex(mac, 32, want_hex);
	memcpy(got_hex, tok + body_end + 1, 64);
	got_hex[64] = 0;
	if (!sigv4_equal(want_hex, got_hex))
		return -EINVAL;
	size_t al = (body_end - hb) / 2;
	if (hash_unhex(tok + hb, al, (uint8_t *)access_key))
		return -EINVAL;
	access_key[al] = 0;
	for (size_t k = 0; k < al; k++)
		if (!key_char(access_key[k]))
			return -EINVAL;
	if (now_s >= exp)
		return -ETIMEDOUT;
	return 0;
}

/* ------------------------------------------------------------ headers */

const char *admin_header(const struct sigv4_header *h, size_t n, const char *name, size_t *len)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (h[i].name_len == nl && !strncasecmp(h[i].name, name, nl)) {
			*len = h[i].value_len;
			return h[i].value;
		}
	return NULL;
}

int admin_find_token(const struct sigv4_header *h, size_t n, const char **tok, size_t *len,
		     bool *from_cookie)
{
	size_t vl;
	const char *v = admin_header(h, n, "authorization", &vl);
	if (v && vl > 7 && !strncasecmp(v, "Bearer ", 7)) {
		*tok = v + 7;
		*len = vl - 7;
		while (*len && (*tok)[*len - 1] == ' ')
			(*len)--;
		*from_cookie = false;
		return *len ? 0 : -ENOENT;
	}
	/* Every Cookie header, each "a=b; c=d". */
	static const char cn[] = ADMIN_COOKIE "=";
	for (size_t i = 0; i < n; i++) {
		if (h[i].name_len != 6 || strncasecmp(h[i].name, "cookie", 6))
			continue;
		const char *p = h[i].value, *e = p + h[i].value_len;
		while (p < e) {
			while (p < e && (*p == ' ' || *p == ';'))
				p++;
			const char *end = memchr(p, ';', (size_t)(e - p));
			if (!end)
				end = e;
			if ((size_t)(end - p) > sizeof(cn) - 1 && !memcmp(p, cn, sizeof(cn) - 1)) {
				*tok = p + sizeof(cn) - 1;
				*len = (size_t)(end - *tok);
				*from_cookie = true;
				return 0;
			}
			p = end;
		}
	}
	return -ENOENT;
}
