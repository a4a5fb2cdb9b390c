/*
 * admin_api_users.c — users and their keys:
 *   GET    /api/v1/users          names, admin flag, access key ids (never
 *                                 a secret)
 *   POST   /api/v1/users          {"name", "admin"?, "access_key"?,
 *                                 "secret_key"?}: PutUser then PutAccessKey
 *                                 (as `iolake-admin user add`); 201 with the
 *                                 key and secret, shown this once
 *   DELETE /api/v1/users/{name}   DeleteUser (its keys go with it); a user
 *                                 cannot delete itself (409)
 *   GET    /api/v1/users/{name}/grants   {"user", "admin", "grants": [{"bucket",
 *                                 "level", "bucket_created_ms"}]}; 404 no user
 *   PUT    /api/v1/users/{name}/grants   {"bucket", "level": "read" | "write" |
 *                                 "full" | "none"}: SetUserGrant (as `iolake-admin
 *                                 user grant|revoke`); 404 no such user or bucket
 * A given access key already in use is 409 before the user is made.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/admin_api_int.h"
#include "common/err.h"
#include "meta/rootkey.h"

/* ------------------------------------------------------------ list */

static const char *level_name(Iolake__Meta__GrantLevel l)
{
	static const char *const names[] = { "none", "read", "write", "full" };
	return (unsigned)l < 4 ? names[l] : "none";
}

static void write_grants(struct jsonw *w, const Iolake__Meta__User *u)
{
	jsonw_key(w, "grants");
	jsonw_arr_begin(w);
	for (size_t j = 0; j < u->n_grants; j++) {
		jsonw_obj_begin(w);
		jsonw_kstr(w, "bucket", u->grants[j]->bucket);
		jsonw_kstr(w, "level", level_name(u->grants[j]->level));
		jsonw_ku64(w, "bucket_created_ms", u->grants[j]->bucket_created_ms);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
}

static void on_users(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__ListUsersResponse *r = (const void *)resp;
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "users");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < r->n_users; i++) {
		const Iolake__Meta__User *u = r->users[i];
		jsonw_obj_begin(&w);
		jsonw_kstr(&w, "name", u->name);
		jsonw_kstr(&w, "display_name", u->display_name);
		jsonw_kbool(&w, "admin", u->admin);
		jsonw_ku64(&w, "created_ms", u->created_ms);
		jsonw_key(&w, "access_keys");
		jsonw_arr_begin(&w);
		for (size_t j = 0; j < u->n_access_keys; j++)
			jsonw_str(&w, u->access_keys[j]);
		jsonw_arr_end(&w);
		admin_write_quota(&w, "quota", u->quota);
		write_grants(&w, u);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_users(struct admin_call *c)
{
	Iolake__Meta__ListUsersRequest req = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_LIST_USERS, &req.base, on_users, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ create */


struct create_state {
	struct admin_user_create in;
	struct admin_key key;
};

static void on_key_put(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	struct create_state *s = admin_call_state(c);
	/* Refused: the user exists without a key; say so, the operator may
	 * delete it and try again. */
	if (admin_key_put_done(c, err, res, "user made, but its access key was refused"))
		admin_reply_key(c, s->in.name, &s->in.admin, &s->key);
}

static void on_user_put(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	struct create_state *s = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, "create user");
		return;
	}
	int rc = admin_key_put(c, s->in.name, &s->key, on_key_put);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void put_user(struct admin_call *c, struct create_state *s)
{
	Iolake__Meta__User u = IOLAKE__META__USER__INIT;
	u.name = s->in.name;
	u.display_name = s->in.name;
	u.created_ms = s->key.created_ms;
	u.admin = s->in.admin;
	Iolake__Meta__PutUser pu = IOLAKE__META__PUT_USER__INIT;
	pu.user = &u;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op.put_user = &pu;
	int rc = admin_meta_submit(c, &op, on_user_put);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void on_key_taken(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct create_state *s = admin_call_state(c);
	const Iolake__Meta__GetAccessKeyResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (!err && r->status == IOLAKE__META__STATUS__STATUS_OK && r->key) {
		admin_reply_error(c, 409, "AlreadyExists", "the access key is already in use");
		return;
	}
	put_user(c, s);
}

void admin_h_user_create(struct admin_call *c)
{
	struct create_state *s = calloc(1, sizeof(*s));
	if (!s) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, s, NULL);
	size_t len;
	const char *body = admin_call_body(c, &len);
	const char *why = "";
	int rc = admin_parse_user_create(body, len, &s->in, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	if (s->in.has_key && rootkey_check(s->in.access_key, s->in.secret_key, &why)) {
		admin_reply_error(c, 400, "InvalidRequest", why);
		return;
	}
	if (s->in.has_key) {
		snprintf(s->key.access_key, sizeof(s->key.access_key), "%s", s->in.access_key);
		snprintf(s->key.secret_key, sizeof(s->key.secret_key), "%s", s->in.secret_key);
		s->key.created_ms = admin_wall_ms();
		/* A key id in use stays its owner's: refuse before the user is
		 * made (meta would refuse the key alone, leaving a keyless user). */
		Iolake__Meta__GetAccessKeyRequest q = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
		q.access_key_id = s->key.access_key;
		rc = admin_meta_call(c, META_M_GET_ACCESS_KEY, &q.base, on_key_taken, NULL);
		if (rc)
			admin_reply_meta_error(c, rc);
		return;
	}
	admin_key_new(&s->key);
	put_user(c, s);
}

/* ------------------------------------------------------------ delete */

static void on_deleted(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	admin_reply_creds_deleted(c, err, res, "delete user");
}

void admin_h_user_delete(struct admin_call *c)
{
	const char *name = admin_call_route(c)->name;
	if (!strcmp(name, admin_call_user(c))) {
		admin_reply_error(c, 409, "Conflict", "a user cannot delete itself through the "
				  "admin API (use another admin, or iolake-admin user rm)");
		return;
	}
	Iolake__Meta__DeleteUser du = IOLAKE__META__DELETE_USER__INIT;
	du.name = (char *)name;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_USER;
	op.delete_user = &du;
	int rc = admin_meta_submit(c, &op, on_deleted);
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ grants */

static void on_grants(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__ListUsersResponse *r = (const void *)resp;
	const char *name = admin_call_route(c)->name;
	for (size_t i = 0; i < r->n_users; i++) {
		const Iolake__Meta__User *u = r->users[i];
		if (strcmp(u->name, name) != 0)
			continue;
		struct jsonw w;
		jsonw_init(&w, 0);
		jsonw_obj_begin(&w);
		jsonw_kstr(&w, "user", u->name);
		jsonw_kbool(&w, "admin", u->admin);
		write_grants(&w, u);
		jsonw_obj_end(&w);
		admin_reply_json(c, 200, &w);
		return;
	}
	admin_reply_error(c, 404, "NoSuchUser", "no such user");
}

void admin_h_user_grants(struct admin_call *c)
{
	Iolake__Meta__ListUsersRequest req = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_LIST_USERS, &req.base, on_grants, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void on_grant_set(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	struct admin_grant_set *g = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, "no such user or bucket");
		return;
	}
	/* The user's cached principal here must not keep its old grants
	 * (the S3 front end follows meta's creds_epoch itself). */
	admin_api_forget_creds(c);
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "user", admin_call_route(c)->name);
	jsonw_kstr(&w, "bucket", g->bucket);
	jsonw_kstr(&w, "level", level_name((Iolake__Meta__GrantLevel)g->level));
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_user_grant_set(struct admin_call *c)
{
	struct admin_grant_set *g = calloc(1, sizeof(*g));
	if (!g) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, g, NULL);
	size_t len;
	const char *body = admin_call_body(c, &len);
	const char *why = "";
	int rc = admin_parse_grant_set(body, len, g, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	Iolake__Meta__SetUserGrant sg = IOLAKE__META__SET_USER_GRANT__INIT;
	sg.user = (char *)admin_call_route(c)->name;
	sg.bucket = g->bucket;
	sg.level = (Iolake__Meta__GrantLevel)g->level;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_USER_GRANT;
	op.set_user_grant = &sg;
	rc = admin_meta_submit(c, &op, on_grant_set);
	if (rc)
		admin_reply_meta_error(c, rc);
}
