/*
 * fuzz_admin_req.c — libFuzzer target for the admin API's request parsing
 * (gateway/admin_req), the aio.json reader iolake-admin uses
 * (admin/aio) and the JSON writer the API answers with
 * (common/jsonw).
 *
 * Input: byte 0 picks what the rest is (copied into an exactly-sized
 * malloc'd buffer, so a read past the end is an ASan report):
 *   0  "METHOD\nPATH[?QUERY]": admin_route_parse (and admin_parse_shard_query
 *      of QUERY); oracle: a user, bucket or key name decoded is
 *      non-empty with no '/' or control byte, an OSD id is below
 *      0xFFFFFFFF, a console file span lies inside the path
 *   1  a login body; 2  a user-create body: accepted values are bounded,
 *      NUL-free, and a created name passes admin_user_name_ok; the same
 *      bytes as a PUT users/NAME/grants body: a bucket and a level 0..3;
 *      as a POST members body: an id 1..2^53 and a HOST:PORT; as a PUT
 *      .../quota body: limits within 0..2^53
 *   3  a session token: admin_token_check must not accept it unless it
 *      is what admin_token_make made; and make/check round-trips the key
 *      made from the input's alphanumerics, expired or not
 *   4  header lines "name: value\n": admin_find_token's span lies inside
 *      one header value
 *   5  an aio.json document: admin_aio_parse's strings are NUL-terminated
 *      within their fields
 *   6  a string: jsonw writes it, common/json parses it back to the same
 *      bytes (when the input is valid UTF-8, which the parser checks)
 *   7  "IF-NONE-MATCH\nETAG": admin_etag_match stays inside the value;
 *      oracle: the value with the ETag appended as one more list member
 *      (or alone) always matches
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonw.h"
#include "gateway/admin_req.h"
#include "admin/aio.h"

static const uint8_t key[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

static void route(const char *d, size_t n)
{
	const char *nl = memchr(d, '\n', n);
	char method[16] = "GET";
	const char *path = d;
	size_t pl = n;
	if (nl && (size_t)(nl - d) < sizeof(method)) {
		memcpy(method, d, (size_t)(nl - d));
		method[nl - d] = 0;
		path = nl + 1;
		pl = n - (size_t)(nl - d) - 1;
	}
	/* "PATH?QUERY": the route of PATH, and QUERY as GET osds/{id}/bad-shards
	 * and GET osds/{id}/shards parse it: accepted, a limit of 1..10000 and
	 * an after whose object id is 1..64 bytes (and, for shards, whose PG
	 * is the one listed). */
	const char *qm = memchr(path, '?', pl);
	if (qm) {
		size_t ql = pl - (size_t)(qm + 1 - path);
		for (int want_pg = 0; want_pg < 2; want_pg++) {
			struct admin_shard_query bq;
			const char *why = NULL;
			if (admin_parse_shard_query(qm + 1, ql, want_pg, &bq, &why) == 0 &&
			    (bq.limit < 1 || bq.limit > 10000 || bq.oid_len > ADMIN_OID_MAX ||
			     (bq.have_after && !bq.oid_len) ||
			     (want_pg && bq.have_after && bq.pg != bq.list_pg)))
				abort();
		}
		pl = (size_t)(qm - path);
	}
	struct admin_route r;
	int rc = admin_route_parse(method, path, pl, &r);
	if (rc && rc != -ENOENT && rc != -EOPNOTSUPP && rc != -EINVAL)
		abort();
	if (rc == 0 && (r.id == ADMIN_R_USER_DELETE || r.id == ADMIN_R_USER_GRANTS ||
			r.id == ADMIN_R_USER_GRANT_SET || r.id == ADMIN_R_QUOTA_GET ||
			r.id == ADMIN_R_QUOTA_SET || r.id == ADMIN_R_QUOTA_CLEAR ||
			r.id == ADMIN_R_KEY_CREATE || r.id == ADMIN_R_KEY_DELETE)) {
		size_t l = strlen(r.name);
		if (!l || l > ADMIN_NAME_MAX || strchr(r.name, '/'))
			abort();
		for (size_t i = 0; i < l; i++)
			if ((unsigned char)r.name[i] < 0x20)
				abort();
	}
	if (rc == 0 && r.id == ADMIN_R_MEMBER_RM &&
	    (!r.member_id || r.member_id > (UINT64_C(1) << 53)))
		abort();
	if (rc == 0 && (r.id == ADMIN_R_OSD_OUT || r.id == ADMIN_R_OSD_IN || r.id == ADMIN_R_OSD_RM ||
			r.id == ADMIN_R_OSD_BAD) &&
	    r.osd_id == 0xFFFFFFFFu)
		abort();
	if (rc == 0 && r.id == ADMIN_R_CONSOLE &&
	    (r.file < path || r.file + r.file_len > path + pl))
		abort();
	if (!admin_route_allow(path, pl))
		abort();
}

static void bodies(int which, const char *d, size_t n)
{
	const char *why = NULL;
	if (which == 1) {
		struct admin_login l;
		if (admin_parse_login(d, n, &l, &why) == 0 &&
		    (!l.access_key[0] || !l.secret_key[0] ||
		     strlen(l.access_key) > ADMIN_KEY_MAX || strlen(l.secret_key) > ADMIN_KEY_MAX))
			abort();
	} else {
		struct admin_user_create u;
		if (admin_parse_user_create(d, n, &u, &why) == 0 &&
		    (!admin_user_name_ok(u.name, strlen(u.name)) || u.has_key != !!u.access_key[0] ||
		     !u.access_key[0] != !u.secret_key[0]))
			abort();
		/* The same bytes as a PUT .../grants body. */
		struct admin_grant_set g;
		if (admin_parse_grant_set(d, n, &g, &why) == 0 &&
		    (!g.bucket[0] || g.level < 0 || g.level > 3))
			abort();
		/* ... as a POST members body ... */
		struct admin_member_add ma;
		if (admin_parse_member_add(d, n, &ma, &why) == 0 &&
		    (!ma.id || ma.id > (UINT64_C(1) << 53) || !strchr(ma.address, ':') ||
		     strlen(ma.address) > ADMIN_ADDR_MAX))
			abort();
		/* ... as a PUT .../quota body ... */
		struct admin_quota_set q;
		if (admin_parse_quota_set(d, n, &q, &why) == 0 &&
		    (q.max_bytes > (UINT64_C(1) << 53) || q.max_objects > (UINT64_C(1) << 53)))
			abort();
		/* ... and as a PUT osds/expect body. */
		struct admin_expect_osds e;
		if (admin_parse_expect_osds(d, n, &e, &why) == 0 && e.osds > ADMIN_EXPECT_OSDS_MAX)
			abort();
	}
}

static void token(const char *d, size_t n)
{
	char ak[ADMIN_KEY_MAX + 1];
	int rc = admin_token_check(key, d, n, 0, ak);
	if (rc == 0 || rc == -ETIMEDOUT) {
		/* accepted: it must be exactly what make gives for its fields */
		char again[ADMIN_TOKEN_MAX + 1];
		const char *p = d + 3;
		uint64_t exp = strtoull(p, NULL, 10);
		int l = admin_token_make(key, ak, exp, again);
		if (l < 0 || (size_t)l != n || memcmp(again, d, n))
			abort();
	}
	/* Round trip on the input's alphanumerics. */
	size_t k = 0;
	for (size_t i = 0; i < n && k < ADMIN_KEY_MAX; i++)
		if ((d[i] >= 'a' && d[i] <= 'z') || (d[i] >= 'A' && d[i] <= 'Z') ||
		    (d[i] >= '0' && d[i] <= '9'))
			ak[k++] = d[i];
	ak[k] = 0;
	char t[ADMIN_TOKEN_MAX + 1], back[ADMIN_KEY_MAX + 1];
	uint64_t exp = 1000 + n;
	int l = admin_token_make(key, ak, exp, t);
	if (k < 3) {
		if (l >= 0)
			abort();
		return;
	}
	if (l < 0 || admin_token_check(key, t, (size_t)l, exp - 1, back) || strcmp(back, ak) ||
	    admin_token_check(key, t, (size_t)l, exp, back) != -ETIMEDOUT)
		abort();
	t[l / 2] ^= 1;
	if (admin_token_check(key, t, (size_t)l, 0, back) == 0)
		abort();
}

static void headers(const char *d, size_t n)
{
	struct sigv4_header h[16];
	size_t nh = 0;
	const char *p = d, *e = d + n;
	while (p < e && nh < 16) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		const char *end = nl ? nl : e;
		const char *colon = memchr(p, ':', (size_t)(end - p));
		if (colon) {
			const char *v = colon + 1;
			while (v < end && *v == ' ')
				v++;
			h[nh++] = (struct sigv4_header){ .name = p, .name_len = (size_t)(colon - p),
							 .value = v, .value_len = (size_t)(end - v) };
		}
		p = end + (nl ? 1 : 0);
	}
	const char *tok;
	size_t tl;
	bool cookie;
	if (admin_find_token(h, nh, &tok, &tl, &cookie) == 0) {
		bool inside = false;
		for (size_t i = 0; i < nh; i++)
			if (tok >= h[i].value && tok + tl <= h[i].value + h[i].value_len)
				inside = true;
		if (!inside)
			abort();
	}
}

static void aio_json(const char *d, size_t n)
{
	struct admin_aio_info a;
	const char *why;
	if (admin_aio_parse(d, n, &a, &why) == 0 &&
	    (a.pid <= 0 || !memchr(a.meta_admin, 0, sizeof(a.meta_admin)) ||
	     !memchr(a.admin_api, 0, sizeof(a.admin_api)) || !a.meta_admin[0]))
		abort();
}

static void writer(const char *d, size_t n)
{
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "s");
	jsonw_strn(&w, d, n);
	jsonw_ku64(&w, "n", n);
	jsonw_obj_end(&w);
	char *doc;
	size_t len;
	if (jsonw_finish(&w, &doc, &len))
		abort();
	struct json_doc *jd;
	if (json_parse(doc, len, NULL, &jd, NULL) == 0) {
		const struct json_value *s = json_get(json_root(jd), "s");
		if (!s || s->type != JSON_STRING || s->u.str.len != n || memcmp(s->u.str.s, d, n))
			abort();
		json_free(jd);
	}
	free(doc);
}

static void etag(const char *d, size_t n)
{
	const char *nl = memchr(d, '\n', n);
	size_t vl = nl ? (size_t)(nl - d) : n;
	char tag[64];
	size_t tl = nl ? n - vl - 1 : 0;
	if (tl >= sizeof(tag))
		tl = sizeof(tag) - 1;
	memcpy(tag, nl ? nl + 1 : d, tl);
	tag[tl] = 0;
	(void)admin_etag_match(d, vl, tag);
	if (!tl || memchr(tag, ',', tl) || memchr(tag, 0, tl) || tag[0] == ' ' ||
	    tag[0] == '\t' || tag[tl - 1] == ' ' || tag[tl - 1] == '\t' ||
	    (tl > 2 && tag[0] == 'W' && tag[1] == '/'))
		return;
	/* the same value with ", TAG" appended names the tag */
	char *v2 = malloc(vl + tl + 2);
	if (!v2)
		return;
	memcpy(v2, d, vl);
	v2[vl] = ',';
	memcpy(v2 + vl + 1, tag, tl);
	if (!admin_etag_match(v2, vl + 1 + tl, tag))
		abort();
	free(v2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 64 * 1024)
		return 0;
	size_t n = size - 1;
	char *d = malloc(n ? n : 1);
	if (!d)
		return 0;
	memcpy(d, data + 1, n);
	switch (data[0] % 8) {
	case 0: route(d, n); break;
	case 1: bodies(1, d, n); break;
	case 2: bodies(2, d, n); break;
	case 3: token(d, n); break;
	case 4: headers(d, n); break;
	case 5: aio_json(d, n); break;
	case 6: writer(d, n); break;
	default: etag(d, n); break;
	}
	free(d);
	return 0;
}
