/*
 * test_admin_req.c — the admin API's request parsing: routes (ids, names,
 * methods, 404/405/400), the Allow list, login and user-create bodies
 * (shapes refused with a reason), session tokens (round trip, expiry, a
 * changed byte, another key) and where a token is carried.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/admin_req.h"

static int route(const char *m, const char *p, struct admin_route *r)
{
	return admin_route_parse(m, p, strlen(p), r);
}

START_TEST(test_routes)
{
	struct admin_route r;
	ck_assert_int_eq(route("GET", "/api/v1/cluster", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_CLUSTER);
	ck_assert_int_eq(route("HEAD", "/api/v1/cluster/", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_CLUSTER);
	ck_assert_int_eq(route("GET", "/api/v1/osds", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSDS);
	ck_assert_int_eq(route("POST", "/api/v1/osds/12/out", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_OUT);
	ck_assert_uint_eq(r.osd_id, 12);
	ck_assert_int_eq(route("POST", "/api/v1/osds/0/in", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_IN);
	ck_assert_uint_eq(r.osd_id, 0);
	ck_assert_int_eq(route("POST", "/api/v1/osds/4294967295/out", &r), -EINVAL);
	ck_assert_int_eq(route("POST", "/api/v1/osds/12a/out", &r), -EINVAL);
	ck_assert_int_eq(route("POST", "/api/v1/osds/12345678901/out", &r), -EINVAL);
	ck_assert_int_eq(route("POST", "/api/v1/osds/1/sideways", &r), -ENOENT);
	ck_assert_int_eq(route("GET", "/api/v1/pgs", &r), 0);
	ck_assert_int_eq(route("GET", "/api/v1/buckets", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_BUCKETS);
	/* issue 20: quotas, GC, scrub, keys */
	ck_assert_int_eq(route("PUT", "/api/v1/buckets/photos/quota", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_QUOTA_SET);
	ck_assert(!r.quota_user);
	ck_assert_str_eq(r.name, "photos");
	ck_assert_int_eq(route("DELETE", "/api/v1/users/a%40b/quota", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_QUOTA_CLEAR);
	ck_assert(r.quota_user);
	ck_assert_str_eq(r.name, "a@b");
	ck_assert_int_eq(route("GET", "/api/v1/users/bob/quota", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_QUOTA_GET);
	ck_assert_int_eq(route("POST", "/api/v1/users/bob/quota", &r), -EOPNOTSUPP);
	ck_assert_str_eq(admin_route_allow("/api/v1/buckets/b/quota", 23), "GET, PUT, DELETE");
	ck_assert_int_eq(route("GET", "/api/v1/gc", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_GC);
	ck_assert_int_eq(route("GET", "/api/v1/scrub", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_SCRUB);
	ck_assert_int_eq(route("POST", "/api/v1/users/bob/keys", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_KEY_CREATE);
	ck_assert_int_eq(route("DELETE", "/api/v1/keys/AKIA1", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_KEY_DELETE);
	ck_assert_str_eq(r.name, "AKIA1");
	ck_assert_int_eq(route("GET", "/api/v1/keys/AKIA1", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("DELETE", "/api/v1/osds/7", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_RM);
	ck_assert_uint_eq(r.osd_id, 7);
	ck_assert_int_eq(route("DELETE", "/api/v1/osds/4294967295", &r), -EINVAL);
	ck_assert_int_eq(route("POST", "/api/v1/members", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_MEMBER_ADD);
	ck_assert_int_eq(route("DELETE", "/api/v1/members/3", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_MEMBER_RM);
	ck_assert_uint_eq(r.member_id, 3);
	ck_assert_int_eq(route("DELETE", "/api/v1/members/0", &r), -EINVAL);
	ck_assert_int_eq(route("DELETE", "/api/v1/members/x", &r), -EINVAL);
	ck_assert_int_eq(route("GET", "/api/v1/users", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_USERS);
	ck_assert_int_eq(route("POST", "/api/v1/users", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_USER_CREATE);
	ck_assert_int_eq(route("DELETE", "/api/v1/users/al%20ice", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_USER_DELETE);
	ck_assert_str_eq(r.name, "al ice");
	ck_assert_int_eq(route("DELETE", "/api/v1/users/a%2Fb", &r), -EINVAL);   /* '/' */
	ck_assert_int_eq(route("DELETE", "/api/v1/users/a%0a", &r), -EINVAL);    /* control */
	ck_assert_int_eq(route("DELETE", "/api/v1/users/a%4", &r), -EINVAL);     /* bad escape */
	ck_assert_int_eq(route("POST", "/api/v1/login", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_LOGIN);
	ck_assert_int_eq(route("GET", "/api/v1/login", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("DELETE", "/api/v1/cluster", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("PUT", "/api/v1/users", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("GET", "/api/v2/cluster", &r), -ENOENT);
	ck_assert_int_eq(route("GET", "/api/v1//cluster", &r), -ENOENT);
	ck_assert_int_eq(route("GET", "/api/v1", &r), -ENOENT);
	ck_assert_int_eq(route("GET", "/api/v1/nothing", &r), -ENOENT);
	ck_assert_int_eq(route("GET", "/console/", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_CONSOLE);
	ck_assert_uint_eq(r.file_len, 0);
	ck_assert_int_eq(route("GET", "/console/app.js", &r), 0);
	ck_assert_uint_eq(r.file_len, 6);
	ck_assert_int_eq(route("GET", "/", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_ROOT);
	ck_assert_int_eq(route("GET", "/api/v1/stats", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_STATS);
	ck_assert_int_eq(route("POST", "/api/v1/stats", &r), -EOPNOTSUPP);
	/* If-None-Match against the console files' ETags */
	const char *tag = "\"0123456789abcdef0123\"";
#define ETAG(v) admin_etag_match(v, strlen(v), tag)
	ck_assert(ETAG(tag));
	ck_assert(ETAG("*"));
	ck_assert(ETAG("\"x\", W/\"0123456789abcdef0123\""));
	ck_assert(ETAG(" \"x\" ,\t\"0123456789abcdef0123\" "));
	ck_assert(!ETAG("\"0123456789abcdef012\""));
	ck_assert(!ETAG("0123456789abcdef0123"));
	ck_assert(!ETAG(""));
	ck_assert(!ETAG(",,, ,"));
#undef ETAG
	ck_assert_str_eq(admin_route_allow("/api/v1/users", 13), "GET, POST");
	ck_assert_str_eq(admin_route_allow("/api/v1/users/x", 15), "DELETE");
	ck_assert_str_eq(admin_route_allow("/api/v1/osds/3/out", 18), "POST");
	ck_assert_str_eq(admin_route_allow("/api/v1/osds/expect", 19), "PUT");
	ck_assert_str_eq(admin_route_allow("/api/v1/osds/7", 14), "DELETE");
	ck_assert_int_eq(route("PUT", "/api/v1/osds/expect/", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_EXPECT);
	ck_assert_int_eq(route("DELETE", "/api/v1/osds/expect", &r), -EOPNOTSUPP);
	ck_assert_str_eq(admin_route_allow("/nope", 5), "");
	ck_assert_int_eq(route("GET", "/api/v1/osds/3/bad-shards", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_BAD);
	ck_assert_uint_eq(r.osd_id, 3);
	ck_assert_int_eq(route("POST", "/api/v1/osds/3/bad-shards", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("GET", "/api/v1/osds/x/bad-shards", &r), -EINVAL);
	ck_assert_int_eq(route("GET", "/api/v1/osds/4294967295/bad-shards", &r), -EINVAL);
	ck_assert_str_eq(admin_route_allow("/api/v1/osds/3/bad-shards", 25), "GET");
	ck_assert_int_eq(route("GET", "/api/v1/osds/12/shards", &r), 0);
	ck_assert_int_eq(r.id, ADMIN_R_OSD_SHARDS);
	ck_assert_uint_eq(r.osd_id, 12);
	ck_assert_int_eq(route("DELETE", "/api/v1/osds/12/shards", &r), -EOPNOTSUPP);
	ck_assert_int_eq(route("GET", "/api/v1/osds/-1/shards", &r), -EINVAL);
	ck_assert_int_eq(route("GET", "/api/v1/osds/1/shard", &r), -ENOENT);
}
END_TEST

static int badq(const char *q, struct admin_shard_query *b, const char **why)
{
	return admin_parse_shard_query(q, strlen(q), false, b, why);
}

static int pgq(const char *q, struct admin_shard_query *b, const char **why)
{
	return admin_parse_shard_query(q, strlen(q), true, b, why);
}

/* GET osds/{id}/bad-shards' query: after=PG:SHARD:OBJECTHEX and limit. */
START_TEST(test_bad_query)
{
	struct admin_shard_query b;
	const char *why = NULL;
	ck_assert_int_eq(badq("", &b, &why), 0);
	ck_assert(!b.have_after);
	ck_assert_uint_eq(b.limit, 1000);
	ck_assert_int_eq(badq("limit=7&after=139:5:1eB4", &b, &why), 0);
	ck_assert_uint_eq(b.limit, 7);
	ck_assert(b.have_after);
	ck_assert_uint_eq(b.pg, 139);
	ck_assert_uint_eq(b.shard, 5);
	ck_assert_uint_eq(b.oid_len, 2);
	ck_assert_uint_eq(b.oid[0], 0x1e);
	ck_assert_uint_eq(b.oid[1], 0xb4);
	ck_assert_int_eq(badq("after=0:0:00&&limit=10000", &b, &why), 0);
	ck_assert_uint_eq(b.limit, 10000);
	char big[200] = "after=1:2:";
	for (int i = 0; i < 64; i++)
		strcat(big, "ab");
	ck_assert_int_eq(badq(big, &b, &why), 0);
	ck_assert_uint_eq(b.oid_len, 64);
	strcat(big, "ab");   /* 65 bytes: too long */
	const char *bad[] = {
		"limit=0", "limit=10001", "limit=", "limit=1x", "after=1:2", "after=1:2:",
		"after=1:2:abc", "after=1:2:zz", "after=x:2:ab", "after=1::ab", ":2:ab",
		"after=4294967295:0:ab", "limit=1&limit=2", "after=1:2:ab&after=1:2:ab",
		"foo=1", "limit", big,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(badq(bad[i], &b, &why) == -EINVAL && why, "%s accepted", bad[i]);
	}
	/* pg is GET osds/{id}/shards' alone */
	ck_assert_int_eq(badq("pg=3", &b, &why), -EINVAL);
}
END_TEST

/* GET osds/{id}/shards' query: the same, and pg=N, required; an after
 * within that PG. */
START_TEST(test_shards_query)
{
	struct admin_shard_query b;
	const char *why = NULL;
	ck_assert_int_eq(pgq("pg=0", &b, &why), 0);
	ck_assert_uint_eq(b.list_pg, 0);
	ck_assert(!b.have_after);
	ck_assert_uint_eq(b.limit, 1000);
	ck_assert_int_eq(pgq("limit=5&after=200:3:ab01&pg=200", &b, &why), 0);
	ck_assert_uint_eq(b.list_pg, 200);
	ck_assert_uint_eq(b.limit, 5);
	ck_assert(b.have_after);
	ck_assert_uint_eq(b.pg, 200);
	ck_assert_uint_eq(b.shard, 3);
	ck_assert_uint_eq(b.oid_len, 2);
	ck_assert_uint_eq(b.oid[1], 0x01);
	const char *bad[] = {
		"", "limit=5", "pg=", "pg=x", "pg=-1", "pg=4294967295", "pg=1&pg=1",
		"pg=1&after=2:0:ab", "pg=1&foo=2", "pg=1&limit=0",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		ck_assert_msg(pgq(bad[i], &b, &why) == -EINVAL && why, "%s accepted", bad[i]);
	}
	ck_assert_int_eq(pgq("after=1:0:ab", &b, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "required"));
}
END_TEST

static int login(const char *b, struct admin_login *l, const char **why)
{
	return admin_parse_login(b, strlen(b), l, why);
}

static int create(const char *b, struct admin_user_create *u, const char **why)
{
	return admin_parse_user_create(b, strlen(b), u, why);
}

START_TEST(test_bodies)
{
	struct admin_login l;
	struct admin_user_create u;
	const char *why = NULL;
	ck_assert_int_eq(login("{\"access_key\":\"AK1\",\"secret_key\":\"s e\"}", &l, &why), 0);
	ck_assert_str_eq(l.access_key, "AK1");
	ck_assert_str_eq(l.secret_key, "s e");
	ck_assert_int_eq(login("{\"access_key\":\"AK1\"}", &l, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "required"));
	ck_assert_int_eq(login("{\"access_key\":\"AK1\",\"secret_key\":1}", &l, &why), -EINVAL);
	ck_assert_int_eq(login("{\"access_key\":\"A\\u0000K\",\"secret_key\":\"x\"}", &l, &why),
			 -EINVAL);
	ck_assert_int_eq(login("{\"access_key\":\"AK1\"", &l, &why), -EBADMSG);
	ck_assert_int_eq(login("{\"access_key\":\"a\",\"access_key\":\"b\"}", &l, &why), -EBADMSG);
	ck_assert_int_eq(login("[]", &l, &why), -EINVAL);

	ck_assert_int_eq(create("{\"name\":\"carol\"}", &u, &why), 0);
	ck_assert_str_eq(u.name, "carol");
	ck_assert(!u.admin && !u.has_key);
	ck_assert_int_eq(create("{\"name\":\"a.b@c\",\"admin\":true,\"access_key\":\"K12\","
				"\"secret_key\":\"sssssssssssssssss\"}", &u, &why), 0);
	ck_assert(u.admin && u.has_key);
	ck_assert_str_eq(u.access_key, "K12");
	ck_assert_int_eq(create("{\"name\":\"carol\",\"admin\":\"yes\"}", &u, &why), -EINVAL);
	ck_assert_int_eq(create("{\"name\":\"car/ol\"}", &u, &why), -EINVAL);
	ck_assert_int_eq(create("{\"name\":\"\"}", &u, &why), -EINVAL);
	ck_assert_int_eq(create("{\"admin\":true}", &u, &why), -EINVAL);
	ck_assert_int_eq(create("{\"name\":\"c\",\"access_key\":\"K12\"}", &u, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "both"));
	ck_assert_int_eq(create("{\"name\":\"c\",\"nmae\":\"x\"}", &u, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "unknown"));
	char big[ADMIN_BODY_MAX + 32];
	memset(big, ' ', sizeof(big));
	memcpy(big, "{}", 2);
	ck_assert_int_eq(admin_parse_user_create(big, sizeof(big), &u, &why), -E2BIG);
	struct admin_quota_set q;
	ck_assert_int_eq(admin_parse_quota_set("{\"max_bytes\":1048576}", 21, &q, &why), 0);
	ck_assert_uint_eq(q.max_bytes, 1048576);
	ck_assert_uint_eq(q.max_objects, 0);
	ck_assert_int_eq(admin_parse_quota_set("{\"max_objects\":3,\"max_bytes\":0}", 31, &q, &why), 0);
	ck_assert_uint_eq(q.max_objects, 3);
	ck_assert_int_eq(admin_parse_quota_set("{}", 2, &q, &why), -EINVAL);
	ck_assert_int_eq(admin_parse_quota_set("{\"max_bytes\":-1}", 16, &q, &why), -EINVAL);
	ck_assert_int_eq(admin_parse_quota_set("{\"max_bytes\":1.5}", 17, &q, &why), -EINVAL);
	ck_assert_int_eq(admin_parse_quota_set("{\"max_bytes\":\"1\"}", 17, &q, &why), -EINVAL);
	ck_assert_int_eq(admin_parse_quota_set("{\"max_bytes\":9007199254740993}", 30, &q, &why),
			 -EINVAL);
	ck_assert_int_eq(admin_parse_quota_set("{\"maxbytes\":1}", 14, &q, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "unknown"));
	struct admin_member_add ma;
	const char *mb = "{\"id\":4,\"address\":\"10.0.0.4:7000\"}";
	ck_assert_int_eq(admin_parse_member_add(mb, strlen(mb), &ma, &why), 0);
	ck_assert_uint_eq(ma.id, 4);
	ck_assert_str_eq(ma.address, "10.0.0.4:7000");
	mb = "{\"id\":0,\"address\":\"h:1\"}";
	ck_assert_int_eq(admin_parse_member_add(mb, strlen(mb), &ma, &why), -EINVAL);
	mb = "{\"id\":1,\"address\":\"no port\"}";
	ck_assert_int_eq(admin_parse_member_add(mb, strlen(mb), &ma, &why), -EINVAL);
	mb = "{\"id\":1}";
	ck_assert_int_eq(admin_parse_member_add(mb, strlen(mb), &ma, &why), -EINVAL);
	struct admin_expect_osds eo;
#define EXPECT(b) admin_parse_expect_osds(b, strlen(b), &eo, &why)
	ck_assert_int_eq(EXPECT("{\"osds\":6}"), 0);
	ck_assert_uint_eq(eo.osds, 6);
	ck_assert_int_eq(EXPECT("{\"osds\":0}"), 0);
	ck_assert_uint_eq(eo.osds, 0);
	ck_assert_int_eq(EXPECT("{\"osds\":4096}"), 0);
	ck_assert_uint_eq(eo.osds, 4096);
	ck_assert_int_eq(EXPECT("{\"osds\":4097}"), -EINVAL);
	ck_assert_int_eq(EXPECT("{\"osds\":-1}"), -EINVAL);
	ck_assert_int_eq(EXPECT("{\"osds\":\"6\"}"), -EINVAL);
	ck_assert_int_eq(EXPECT("{}"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "required"));
	ck_assert_int_eq(EXPECT("{\"osd\":6}"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "unknown"));
	ck_assert_int_eq(EXPECT("[6]"), -EINVAL);
	ck_assert_int_eq(EXPECT("{\"osds\":"), -EBADMSG);
#undef EXPECT
	ck_assert(admin_user_name_ok("Ab0+=,.@_-", 10));
	ck_assert(!admin_user_name_ok("a b", 3));
	ck_assert(!admin_user_name_ok("", 0));
	char n65[65];
	memset(n65, 'a', 65);
	ck_assert(!admin_user_name_ok(n65, 65));
	ck_assert(admin_user_name_ok(n65, 64));
}
END_TEST

START_TEST(test_tokens)
{
	uint8_t k1[32] = { 1 }, k2[32] = { 2 };
	char t[ADMIN_TOKEN_MAX + 1], ak[ADMIN_KEY_MAX + 1];
	int n = admin_token_make(k1, "AKIAEXAMPLE1", 1000, t);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq((int)strlen(t), n);
	ck_assert_int_eq(strncmp(t, "v1.1000.", 8), 0);
	ck_assert_int_eq(admin_token_check(k1, t, (size_t)n, 999, ak), 0);
	ck_assert_str_eq(ak, "AKIAEXAMPLE1");
	ck_assert_int_eq(admin_token_check(k1, t, (size_t)n, 1000, ak), -ETIMEDOUT);
	ck_assert_int_eq(admin_token_check(k2, t, (size_t)n, 0, ak), -EINVAL);
	for (int i = 0; i < n; i++) {
		char c[ADMIN_TOKEN_MAX + 1];
		memcpy(c, t, (size_t)n + 1);
		c[i] = c[i] == '1' ? '2' : '1';
		ck_assert_int_ne(admin_token_check(k1, c, (size_t)n, 0, ak), 0);
	}
	/* a later expiry written in: the MAC no longer matches */
	char forged[ADMIN_TOKEN_MAX + 1];
	snprintf(forged, sizeof(forged), "v1.9999%s", t + 7);
	ck_assert_int_eq(admin_token_check(k1, forged, strlen(forged), 0, ak), -EINVAL);
	ck_assert_int_eq(admin_token_check(k1, t, (size_t)n - 1, 0, ak), -EINVAL);
	ck_assert_int_eq(admin_token_make(k1, "A-B", 1, t), -EINVAL);
	ck_assert_int_eq(admin_token_make(k1, "AB", 1, t), -EINVAL);
}
END_TEST

START_TEST(test_find_token)
{
	struct sigv4_header h[2] = {
		{ "Authorization", 13, "Bearer abc ", 11 },
		{ "Cookie", 6, "x=1; iolake_session=tok; y=2", 28 },
	};
	const char *tok;
	size_t len;
	bool cookie;
	ck_assert_int_eq(admin_find_token(h, 2, &tok, &len, &cookie), 0);
	ck_assert(!cookie);
	ck_assert_int_eq((int)len, 3);
	ck_assert_int_eq(memcmp(tok, "abc", 3), 0);
	ck_assert_int_eq(admin_find_token(h + 1, 1, &tok, &len, &cookie), 0);
	ck_assert(cookie);
	ck_assert_int_eq((int)len, 3);
	ck_assert_int_eq(memcmp(tok, "tok", 3), 0);
	struct sigv4_header s[1] = { { "authorization", 13, "AWS4-HMAC-SHA256 Cred", 21 } };
	ck_assert_int_eq(admin_find_token(s, 1, &tok, &len, &cookie), -ENOENT);
	struct sigv4_header c[1] = { { "cookie", 6, "iolake_session_x=1", 18 } };
	ck_assert_int_eq(admin_find_token(c, 1, &tok, &len, &cookie), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin_req");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_routes);
	tcase_add_test(tc, test_bad_query);
	tcase_add_test(tc, test_shards_query);
	tcase_add_test(tc, test_bodies);
	tcase_add_test(tc, test_tokens);
	tcase_add_test(tc, test_find_token);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
