/*
 * admin_api_int.h — what the admin API's resource files share with its
 * core (admin_api.c): the call (one HTTP exchange, alive until both the
 * exchange and every meta or OSD call it started are over), replies, and
 * meta/OSD calls that are safe when the client goes away first.
 *
 * One file per resource: admin_api_cluster.c, admin_api_osds.c (OSDs and
 * PGs), admin_api_buckets.c, admin_api_users.c. Each handler receives an
 * authenticated admin call and must reply exactly once (or find the
 * exchange gone: admin_call_live false, then it only releases its state).
 */
#ifndef GATEWAY_ADMIN_API_INT_H
#define GATEWAY_ADMIN_API_INT_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "common/jsonw.h"
#include "common/rpc.h"
#include "gateway/admin_api.h"
#include "gateway/admin_req.h"
#include "gateway/gw_stats.h"
#include "gateway/http.h"
#include "gateway/s3_auth.h"
#include "meta/client.h"
#include "proto/osd.pb-c.h"

#define ADMIN_OSD_CHANNELS 256   /* OSD channels kept open (by address) */
#define ADMIN_OSD_TIMEOUT_MS 2000
#define ADMIN_CSRF_HEADER "x-iolake-console"

/* ------------------------------------------------------------ core and auth only
 * The structs are admin_api.c's and admin_api_auth.c's; resource files
 * use the accessors below. */

struct osd_chan {
	char addr[META_ADDR_MAX];
	struct rpc_channel *ch;
};

struct admin_api {
	uv_loop_t *loop;
	struct http_server *http;
	struct meta_client *mc;
	struct s3_auth *auth;
	char region[64];
	uint8_t token_key[32];           /* session tokens' HMAC key: random, per process */
	uint32_t session_ttl_s;
	struct gw_stats *stats;    /* the S3 front end's, or NULL */
	struct gw_gc *gc;          /* the shard GC worker, or NULL */
	struct gw_map *map;        /* creds_epoch source, or NULL */
	uint64_t creds_gen;        /* last gw_map_creds_epoch seen */
	struct osd_chan chans[ADMIN_OSD_CHANNELS];
	size_t n_chans;
	void (*close_cb)(void *);
	void *close_arg;
	bool closing;
};

struct admin_call {
	struct admin_api *api;
	struct http_stream *s;           /* NULL once the exchange finished */
	unsigned pending;                /* meta / OSD / credential calls out */
	struct admin_route route;
	int route_rc;
	/* the request head, copied */
	char method[16];
	char *path, *query;
	size_t path_len, query_len;
	struct sigv4_header *headers;
	size_t n_headers;
	char *head_mem;
	/* the body */
	char *body;
	size_t body_len;
	bool body_over, replied;
	/* who */
	char body_sha256[65];            /* hex, when the client sent no digest */
	char user[S3_AUTH_USER_MAX + 1];
	char access_key[ADMIN_KEY_MAX + 1];
	bool by_cookie;
	struct s3_auth_req ar;
	struct s3_cred_lookup lk;        /* token and login lookups */
	struct admin_login login;
	/* the handler's */
	void *state;
	void (*state_free)(void *);
};

/* admin_api.c: the call is authenticated; 403 unless admin, then the
 * resource's handler. */
void admin_call_authorized(struct admin_call *c, bool admin);
/* admin_api.c: free c once its exchange is over and nothing is pending. */
void admin_call_release(struct admin_call *c);
/* admin_api_auth.c: the credential source of the API's s3_auth (ctx: the
 * struct admin_api). */
void admin_cred_lookup(void *ctx, struct s3_cred_lookup *l);
/* admin_api_auth.c: authenticate a resource call (SigV4 or session). */
void admin_authenticate(struct admin_call *c);
/* admin_api_auth.c: POST /api/v1/login, /logout. */
void admin_login(struct admin_call *c);
void admin_logout(struct admin_call *c);

/* ------------------------------------------------------------ for resources */

/* The authenticated user of the call. */
const char *admin_call_user(const struct admin_call *c);
const char *admin_call_access_key(const struct admin_call *c);
const struct admin_route *admin_call_route(const struct admin_call *c);
const char *admin_call_body(const struct admin_call *c, size_t *len);
const char *admin_call_query(const struct admin_call *c, size_t *len);
/* false once the client is gone: reply nothing, release state. */
bool admin_call_live(const struct admin_call *c);
/* A handler's state, freed with the call by free_fn (NULL: free()). */
void admin_call_set_state(struct admin_call *c, void *state, void (*free_fn)(void *));
void *admin_call_state(const struct admin_call *c);
struct meta_client *admin_call_meta(const struct admin_call *c);

/* A reply whose body is static (not copied, never freed), with extra
 * headers and no Cache-Control of its own (the caller's say). */
struct admin_static_hdr {
	const char *name, *value;
};
void admin_reply_static(struct admin_call *c, int status, const char *ctype,
			const struct admin_static_hdr *h, size_t n_h, const void *body,
			size_t len);

/* Replies: the JSON document of w (taken and freed), with status. */
void admin_reply_json(struct admin_call *c, int status, struct jsonw *w);
/* {"error": code, "message": msg} with status. */
void admin_reply_error(struct admin_call *c, int status, const char *code, const char *msg);
/* A meta call failed with err (meta_client's codes): 503 (unreachable, no
 * leader), 404 (IOL_ENOT_FOUND), 400 (-EINVAL), 500 otherwise. */
void admin_reply_meta_error(struct admin_call *c, int err);
/* An op's status (not OK): 404 NOT_FOUND, 409 EXISTS / CONFLICT, 400
 * INVALID, 500 else. what names the op in the message. */
void admin_reply_status(struct admin_call *c, int status, const char *what);

/* Meta calls on behalf of c: cb runs only while the call is alive
 * (exchange or not: check admin_call_live). 0, or the error of
 * meta_client_call (cb does not run). */
typedef void (*admin_meta_cb)(struct admin_call *c, void *ud, int err,
			      const ProtobufCMessage *resp);
int admin_meta_call(struct admin_call *c, unsigned method, const ProtobufCMessage *req,
		    admin_meta_cb cb, void *ud);
int admin_meta_call_member(struct admin_call *c, size_t member, unsigned method,
			   const ProtobufCMessage *req, admin_meta_cb cb, void *ud);
typedef void (*admin_submit_cb)(struct admin_call *c, int err, const Iolake__Meta__OpResult *res);
int admin_meta_submit(struct admin_call *c, const Iolake__Meta__Op *op, admin_submit_cb cb);

/* A call of an OSD's RPC service (osd.proto method, OSD_M_*), over a
 * channel the API keeps per address; admin_osd_status is its Status. cb
 * gets the result (resp NULL unless RPC_OK); ud is the caller's. */
typedef void (*admin_osd_cb)(struct admin_call *c, void *ud, int rpc_status,
			     const ProtobufCMessage *resp);
void admin_osd_call(struct admin_call *c, const char *addr, unsigned method,
		    const ProtobufCMessage *req, admin_osd_cb cb, void *ud);
void admin_osd_status(struct admin_call *c, const char *addr, admin_osd_cb cb, void *ud);

/* A deep copy of a message (pack + unpack), NULL when out of memory or
 * m is NULL; free with admin_msg_free (NULL is fine). */
ProtobufCMessage *admin_msg_copy(const ProtobufCMessage *m);
void admin_msg_free(ProtobufCMessage *m);

/* Forget every cached credential (after a user or key was removed). */
void admin_api_forget_creds(struct admin_call *c);
/* The answer to a DeleteUser or DeleteAccessKey submit: the meta error,
 * the status with `what`, or (credentials forgotten) 200 {"deleted": the
 * route's name}. */
void admin_reply_creds_deleted(struct admin_call *c, int err, const Iolake__Meta__OpResult *res,
			       const char *what);

/* Handlers (one file per resource). */
void admin_h_cluster(struct admin_call *c);
void admin_h_osds(struct admin_call *c);
void admin_h_osd_out_in(struct admin_call *c);
void admin_h_osd_expect(struct admin_call *c);
void admin_h_pgs(struct admin_call *c);
void admin_h_buckets(struct admin_call *c);
void admin_h_users(struct admin_call *c);
void admin_h_user_create(struct admin_call *c);
void admin_h_user_delete(struct admin_call *c);
void admin_h_user_grants(struct admin_call *c);
void admin_h_user_grant_set(struct admin_call *c);
void admin_h_stats(struct admin_call *c);       /* admin_api_stats.c */
void admin_h_quota_get(struct admin_call *c);   /* admin_api_quota.c */
void admin_h_quota_set(struct admin_call *c);
void admin_h_quota_clear(struct admin_call *c);
void admin_h_gc(struct admin_call *c);          /* admin_api_gc.c */
void admin_h_scrub(struct admin_call *c);       /* admin_api_osds.c: asks the OSDs */
void admin_h_osd_list(struct admin_call *c);    /* admin_api_osds.c: one OSD's bad shards, or its shards in a PG */
void admin_h_key_create(struct admin_call *c);  /* admin_api_users.c */
void admin_h_key_delete(struct admin_call *c);
void admin_h_member_add(struct admin_call *c);  /* admin_api_members.c */
void admin_h_member_rm(struct admin_call *c);
void admin_h_osd_rm(struct admin_call *c);
void admin_h_console(struct admin_call *c);     /* admin_api_console.c: no auth */

/* admin_api_scrub.c: GET /api/v1/scrub's answer from the map's OSDs and
 * each one's Status (st[i] NULL: rpc_status[i] says why). */
void admin_scrub_reply(struct admin_call *c, const Iolake__Meta__ClusterMap *m,
		       const Iolake__Osd__StatusResponse *const *st, const int *rpc_status,
		       size_t n);

/* admin_api_quota.c: "k": {"max_bytes", "max_objects"} or null. */
void admin_write_quota(struct jsonw *w, const char *k, const Iolake__Meta__Quota *q);

/* admin_api_keys.c: a key being given to a user (a new one, or with a
 * user being made), shown once in the 201 answer. */
struct admin_key {
	char access_key[ADMIN_KEY_MAX + 1], secret_key[ADMIN_KEY_MAX + 1];
	uint64_t created_ms;
};
/* A new AWS-shaped key (rootkey_generate), made now. */
void admin_key_new(struct admin_key *k);
/* PutAccessKey of k for user (cb as admin_meta_submit's). 0, or the
 * submit's error (cb does not run then). */
int admin_key_put(struct admin_call *c, const char *user, const struct admin_key *k,
		  admin_submit_cb cb);
/* In the put's cb: true when the key was stored; else the answer is
 * given (a meta error, or res's status with refused as its message). */
bool admin_key_put_done(struct admin_call *c, int err, const Iolake__Meta__OpResult *res,
			const char *refused);
/* 201 {"user", "admin" (when admin is not NULL), "access_key",
 * "secret_key", "created_ms"}: the secret, shown this once. */
void admin_reply_key(struct admin_call *c, const char *user, const bool *admin,
		     const struct admin_key *k);

/* Wall clock in ms. */
uint64_t admin_wall_ms(void);

#endif
