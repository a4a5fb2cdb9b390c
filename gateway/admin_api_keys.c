/*
 * admin_api_keys.c — access keys as their own resource (issue 20):
 *   POST   /api/v1/users/{name}/keys  another key for an existing user:
 *                                     no body (generated) or {"access_key",
 *                                     "secret_key"} (a known key); 201 with
 *                                     the secret, shown this once
 *   DELETE /api/v1/keys/{id}          delete one key (it stops working at
 *                                     once); not the key of this call (409)
 * PutAccessKey and DeleteAccessKey, as `iolake-admin user` does them.
 * Disabling a key without deleting it is not built (meta has no such
 * state).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/admin_api_int.h"
#include "meta/rootkey.h"

struct key_state {
	char access_key[ADMIN_KEY_MAX + 1], secret_key[ADMIN_KEY_MAX + 1];
	uint64_t created_ms;
};

static void on_key_put(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	struct key_state *s = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status,
				   res->status == IOLAKE__META__STATUS__STATUS_EXISTS
					   ? "the access key is already in use" : "no such user");
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "user", admin_call_route(c)->name);
	jsonw_kstr(&w, "access_key", s->access_key);
	jsonw_kstr(&w, "secret_key", s->secret_key);
	jsonw_ku64(&w, "created_ms", s->created_ms);
	jsonw_obj_end(&w);
	admin_reply_json(c, 201, &w);
}

void admin_h_key_create(struct admin_call *c)
{
	struct key_state *s = calloc(1, sizeof(*s));
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
	} else {
		admin_new_key(s->access_key, s->secret_key);
	}
	s->created_ms = admin_wall_ms();
	Iolake__Meta__AccessKey k = IOLAKE__META__ACCESS_KEY__INIT;
	k.access_key_id = s->access_key;
	k.secret_key = s->secret_key;
	k.user = (char *)admin_call_route(c)->name;
	k.created_ms = s->created_ms;
	Iolake__Meta__PutAccessKey pk = IOLAKE__META__PUT_ACCESS_KEY__INIT;
	pk.key = &k;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
	op.put_access_key = &pk;
	int rc = admin_meta_submit(c, &op, on_key_put);
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
