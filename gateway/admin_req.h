/*
 * admin_req.h — the admin HTTP API's request parsing, bytes in, results
 * out: the route of a method and path, the JSON bodies of login and user
 * creation (through common/json), session tokens (made and checked with
 * an HMAC key the caller holds) and where a request carries one (an
 * Authorization: Bearer header or the iolake_session cookie).
 *
 * Pure: no I/O, no clock (the caller passes the time), no globals; so
 * tests/fuzz/fuzz_admin_req.c drives all of it. What a route does is
 * gateway/admin_api*.c's; how a user or key is stored is meta's.
 */
#ifndef GATEWAY_ADMIN_REQ_H
#define GATEWAY_ADMIN_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"

#define ADMIN_BODY_MAX (16 * 1024)    /* request bodies: beyond, 413 */
#define ADMIN_NAME_MAX 128            /* user names (meta's bound) */
#define ADMIN_KEY_MAX 128             /* access key ids and secrets */
#define ADMIN_TOKEN_MAX 400           /* a session token, NUL excluded */
#define ADMIN_COOKIE "iolake_session"

enum admin_route_id {
	ADMIN_R_ROOT,          /* GET /            -> redirect to the console */
	ADMIN_R_CONSOLE,       /* GET /console/... (static files, no auth) */
	ADMIN_R_LOGIN,         /* POST /api/v1/login */
	ADMIN_R_LOGOUT,        /* POST /api/v1/logout */
	ADMIN_R_CLUSTER,       /* GET /api/v1/cluster */
	ADMIN_R_OSDS,          /* GET /api/v1/osds */
	ADMIN_R_OSD_OUT,       /* POST /api/v1/osds/{id}/out */
	ADMIN_R_OSD_IN,        /* POST /api/v1/osds/{id}/in */
	ADMIN_R_PGS,           /* GET /api/v1/pgs */
	ADMIN_R_BUCKETS,       /* GET /api/v1/buckets */
	ADMIN_R_USERS,         /* GET /api/v1/users */
	ADMIN_R_USER_CREATE,   /* POST /api/v1/users */
	ADMIN_R_USER_DELETE,   /* DELETE /api/v1/users/{name} */
	ADMIN_R_USER_GRANTS,   /* GET /api/v1/users/{name}/grants */
	ADMIN_R_USER_GRANT_SET, /* PUT /api/v1/users/{name}/grants */
	ADMIN_R_STATS,         /* GET /api/v1/stats */
	ADMIN_R_QUOTA_GET,     /* GET /api/v1/buckets/{b}/quota, /api/v1/users/{u}/quota */
	ADMIN_R_QUOTA_SET,     /* PUT the same */
	ADMIN_R_QUOTA_CLEAR,   /* DELETE the same */
	ADMIN_R_GC,            /* GET /api/v1/gc */
	ADMIN_R_SCRUB,         /* GET /api/v1/scrub */
	ADMIN_R_KEY_CREATE,    /* POST /api/v1/users/{name}/keys */
	ADMIN_R_KEY_DELETE,    /* DELETE /api/v1/keys/{id} */
	ADMIN_R_OSD_RM,        /* DELETE /api/v1/osds/{id} */
	ADMIN_R_MEMBER_ADD,    /* POST /api/v1/members */
	ADMIN_R_MEMBER_RM,     /* DELETE /api/v1/members/{id} */
	ADMIN_R_OSD_EXPECT,    /* PUT /api/v1/osds/expect */
	ADMIN_R_OSD_BAD,       /* GET /api/v1/osds/{id}/bad-shards */
	ADMIN_R_OSD_SHARDS,    /* GET /api/v1/osds/{id}/shards?pg=N */
	ADMIN_R__COUNT
};

struct admin_route {
	enum admin_route_id id;
	uint32_t osd_id;                  /* ADMIN_R_OSD_OUT / _IN / _RM / _BAD / _SHARDS */
	uint64_t member_id;               /* ADMIN_R_MEMBER_RM: 1..2^53 */
	char name[ADMIN_NAME_MAX + 1];    /* ADMIN_R_USER_DELETE, _GRANTS, _GRANT_SET,
	                                   * _QUOTA_*, _KEY_*: percent-decoded */
	bool quota_user;                  /* ADMIN_R_QUOTA_*: name is a user (else a bucket) */
	const char *file;                 /* ADMIN_R_CONSOLE: path after /console/ (a span
	                                   * into the input, file_len bytes) */
	size_t file_len;
};

/* Route method (e.g. "GET"; HEAD routes as GET) and path (before '?').
 * 0 and *r; -ENOENT no such resource (404); -EOPNOTSUPP the resource
 * exists but not with this method (405); -EINVAL a malformed id or name
 * (400). A trailing '/' after a resource is accepted. */
int admin_route_parse(const char *method, const char *path, size_t path_len,
		      struct admin_route *r);

/* The methods a resource takes ("GET", "POST", "DELETE" joined by ", "),
 * for the Allow header of a 405; "" when the path is unknown. */
const char *admin_route_allow(const char *path, size_t path_len);

/* User names the API creates: 1..64 of A-Z a-z 0-9 and + = , . @ _ -
 * (IAM's set). */
bool admin_user_name_ok(const char *s, size_t len);

/* POST /api/v1/login: {"access_key": "...", "secret_key": "..."}. */
struct admin_login {
	char access_key[ADMIN_KEY_MAX + 1];
	char secret_key[ADMIN_KEY_MAX + 1];
};

/* POST /api/v1/users: {"name": "...", "admin": false, "access_key": "...",
 * "secret_key": "..."}; admin and the key pair are optional (the pair both
 * or neither: given, a deployment's known key; absent, generated). */
struct admin_user_create {
	char name[ADMIN_NAME_MAX + 1];
	bool admin;
	bool has_key;
	char access_key[ADMIN_KEY_MAX + 1];
	char secret_key[ADMIN_KEY_MAX + 1];
};

/* PUT /api/v1/users/{name}/grants: {"bucket": "...", "level": "read" |
 * "write" | "full" | "none"}: the user's grant on one bucket ("none"
 * revokes it). level as meta.proto's GrantLevel (0 none .. 3 full). */
struct admin_grant_set {
	char bucket[64];
	int level;
};

/* PUT /api/v1/{buckets|users}/{name}/quota: {"max_bytes": N,
 * "max_objects": N}, each optional, whole numbers 0..2^53 (0: no limit on
 * that dimension), at least one given. */
struct admin_quota_set {
	uint64_t max_bytes, max_objects;
};

/* POST /api/v1/members: {"id": N, "address": "host:port"}: a meta member
 * to add (id 1..2^53; the address 1..63 printable bytes, no space). */
#define ADMIN_ADDR_MAX 63
struct admin_member_add {
	uint64_t id;
	char address[ADMIN_ADDR_MAX + 1];
};

/* PUT /api/v1/osds/expect: {"osds": N}, the OSDs a new cluster's first PG
 * table waits for (0..4096, PLACE_MAX_OSDS; 0: place it now). */
#define ADMIN_EXPECT_OSDS_MAX 4096
struct admin_expect_osds {
	uint32_t osds;
};

/* Parse a body. 0 and *out; -EBADMSG not JSON (why: the parser's reason);
 * -EINVAL JSON of the wrong shape (an unknown member, a wrong type, a
 * missing or bad value: why says which); -E2BIG over ADMIN_BODY_MAX. why
 * is static text. Unknown members are refused, so a typo is not ignored. */
int admin_parse_login(const char *body, size_t len, struct admin_login *out, const char **why);
int admin_parse_user_create(const char *body, size_t len, struct admin_user_create *out,
			    const char **why);
int admin_parse_grant_set(const char *body, size_t len, struct admin_grant_set *out,
			  const char **why);
int admin_parse_quota_set(const char *body, size_t len, struct admin_quota_set *out,
			  const char **why);
int admin_parse_member_add(const char *body, size_t len, struct admin_member_add *out,
			   const char **why);
int admin_parse_expect_osds(const char *body, size_t len, struct admin_expect_osds *out,
			    const char **why);

/* The query of GET osds/{id}/bad-shards and GET osds/{id}/shards:
 * after=PG:SHARD:OBJECTHEX (the last shard of the previous page, as its
 * answer's "next" gives it; the object id 1..64 bytes in lowercase or
 * uppercase hex) and limit=1..10000 (default 1000), in any order; with
 * want_pg (shards: one PG's listing) also pg=N, required, and an after
 * within that PG; other parameters are refused. 0 and *out; -EINVAL with
 * why. */
#define ADMIN_OID_MAX 64
struct admin_shard_query {
	bool have_after;
	uint32_t pg, shard;            /* after's */
	uint8_t oid[ADMIN_OID_MAX];
	size_t oid_len;
	uint32_t limit;
	uint32_t list_pg;              /* want_pg: the PG listed */
};
int admin_parse_shard_query(const char *q, size_t len, bool want_pg,
			    struct admin_shard_query *out, const char **why);

/* A session token for access_key (3..128 of A-Z a-z 0-9, rootkey's set)
 * valid until expires_s (Unix seconds):
 *   "v1." <expires_s> "." <hex of the access key> "." <64 hex: HMAC-SHA256>
 * with the HMAC under key over everything before the last '.'. Returns the
 * length, or -EINVAL (bad access key). */
int admin_token_make(const uint8_t key[32], const char *access_key, uint64_t expires_s,
		     char out[ADMIN_TOKEN_MAX + 1]);

/* Check a token: 0 and the access key it names; -EINVAL malformed or a
 * wrong MAC (compared in constant time); -ETIMEDOUT expired (now_s >=
 * expires). */
int admin_token_check(const uint8_t key[32], const char *tok, size_t len, uint64_t now_s,
		      char access_key[ADMIN_KEY_MAX + 1]);

/* Where a request carries a session token: "Authorization: Bearer T"
 * (*from_cookie false), else a Cookie header's iolake_session=T (true).
 * 0 and the span; -ENOENT none. Other Authorization schemes are not
 * tokens (-ENOENT, unless a cookie holds one). */
int admin_find_token(const struct sigv4_header *h, size_t n, const char **tok, size_t *len,
		     bool *from_cookie);

/* Does an If-None-Match value (a comma-separated list of entity tags, or
 * "*") name etag (quoted, e.g. "\"abc\"")? Weak tags (W/"...") compare
 * by their opaque part, as RFC 7232 section 3.2 says for If-None-Match. */
bool admin_etag_match(const char *v, size_t len, const char *etag);

/* The value of header name (case-insensitive), or NULL; *len set. */
const char *admin_header(const struct sigv4_header *h, size_t n, const char *name, size_t *len);

#endif
