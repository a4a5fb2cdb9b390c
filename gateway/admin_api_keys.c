/*
 * admin_api_keys.c — access keys as their own resource (issue 20):
 *   POST   /api/v1/users/{name}/keys  another key for an existing user:
 *                                     no body (generated) or {"access_key",
 *                                     "secret_key"} (a known key); 201 with
 *                                     the secret, shown this once
 *   DELETE /api/v1/keys/{id}          delete one key (it stops working at
 *                                     once); not the key of this call (409)
 * PutAccessKey and DeleteAccessKey, as `iolake-admin user` does them; the
 * key put and its 201 answer serve admin_api_users.c's user creation too.
 * Disabling a key without deleting it is not built (meta has no such
 * state).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/admin_api_int.h"
#include "meta/rootkey.h"

void admin_key_new(struct admin_key *k)
{
	rootkey_generate(k->access_key, k->secret_key);
	k->created_ms = admin_wall_ms();
}

int admin_key_put(struct admin_call *c, const char *user, const struct admin_key *key,
		  admin_submit_cb cb)
{
	Iolake__Meta__AccessKey k = IOLAKE__META__ACCESS_KEY__INIT;
	k.access_key_id = (char *)key->access_key;
	k.secret_key = (char *)key->secret_key;
	k.user = (char *)user;
	k.created_ms = key->created_ms;
	Iolake__Meta__PutAccessKey pk = IOLAKE__META__PUT_ACCESS_KEY__INIT;
	pk.key = &k;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
	op.put_access_key = &pk;
	return admin_meta_submit(c, &op, cb);
}

bool admin_key_put_done(struct admin_call *c, int err, const Iolake__Meta__OpResult *res,
			const char *refused)
{
	if (err) {
		admin_reply_meta_error(c, err);
		return false;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, refused);
		return false;
	}
	return true;
}

void admin_reply_key(struct admin_call *c, const char *user, const bool *admin,
		     const struct admin_key *k)
{
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "user", user);
	if (admin)
		jsonw_kbool(&w, "admin", *admin);
	jsonw_kstr(&w, "access_key", k->access_key);
	jsonw_kstr(&w, "secret_key", k->secret_key);
	jsonw_ku64(&w, "created_ms", k->created_ms);
	jsonw_obj_end(&w);
	admin_reply_json(c, 201, &w);
}

static void on_key_put(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	const struct admin_key *s = admin_call_state(c);
	if (admin_key_put_done(c, err, res,
			       res && res->status == IOLAKE__META__STATUS__STATUS_EXISTS
				       ? "the access key is already in use" : "no such user"))
		admin_reply_key(c, admin_call_route(c)->name, NULL, s);
}

void admin_h_key_create(struct admin_call *c)
{
	struct admin_key *s = calloc(1, sizeof(*s));
	if (!s) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, s, NULL);
	size_t len;
	const char *body = admin_call_body(c, &len);
	if (len) {
		struct admin_login in;   /* the same two members */
		const char *why = "";
		int rc = admin_parse_login(body, len, &in, &why);
		if (!rc && rootkey_check(in.access_key, in.secret_key, &why))
			rc = -EINVAL;
		if (rc) {
			admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest",
					  why);
			return;
		}
		memcpy(s->access_key, in.access_key, sizeof(s->access_key));
		memcpy(s->secret_key, in.secret_key, sizeof(s->secret_key));
		s->created_ms = admin_wall_ms();
	} else {
		admin_key_new(s);
	}
	int rc = admin_key_put(c, admin_call_route(c)->name, s, on_key_put);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void on_key_deleted(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	admin_reply_creds_deleted(c, err, res, "no such access key");
}

void admin_h_key_delete(struct admin_call *c)
{
	const char *id = admin_call_route(c)->name;
	if (!strcmp(id, admin_call_access_key(c))) {
		admin_reply_error(c, 409, "Conflict", "a key cannot delete itself through the "
				  "admin API (use another key or admin)");
		return;
	}
	Iolake__Meta__DeleteAccessKey dk = IOLAKE__META__DELETE_ACCESS_KEY__INIT;
	dk.access_key_id = (char *)id;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_ACCESS_KEY;
	op.delete_access_key = &dk;
	int rc = admin_meta_submit(c, &op, on_key_deleted);
	if (rc)
		admin_reply_meta_error(c, rc);
}
