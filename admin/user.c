/*
 * user.c — iolake-admin's user add, rm, grant, revoke, admin, ls, show,
 * rekey and cluster init-key (contracts in user.h).
 *
 * Runs calls one after another on the caller's loop (it runs the loop
 * until each answers), as iolake-admin does. Owns nothing past a call.
 * Never prints a secret but in `user add`, once. rekey hands a clear secret back to meta in a
 * ResealAccessKey, whose receiving member seals it before proposing.
 */
#include "admin/user.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/call.h"
#include "common/err.h"
#include "meta/rootkey.h"
#include "meta/secret.h"

static int call(struct meta_client *c, uv_loop_t *loop, unsigned method,
		const ProtobufCMessage *req, ProtobufCMessage **out)
{
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_call(c, method, req, admin_on_call, &w));
	*out = w.resp;
	return rc;
}

static int submit(struct meta_client *c, uv_loop_t *loop, const Iolake__Meta__Op *op,
		  Iolake__Meta__Status *st)
{
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_submit(c, op, admin_on_submit, &w));
	*st = w.status;
	return rc;
}

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

static const char *status_name(Iolake__Meta__Status st)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&iolake__meta__status__descriptor, (int)st);
	return v ? v->name : "unknown status";
}

static const char *level_name(Iolake__Meta__GrantLevel l)
{
	switch (l) {
	case IOLAKE__META__GRANT_LEVEL__GRANT_READ: return "read";
	case IOLAKE__META__GRANT_LEVEL__GRANT_WRITE: return "write";
	case IOLAKE__META__GRANT_LEVEL__GRANT_FULL: return "full";
	default: return "none";
	}
}

/* ------------------------------------------------------------ ls, show */

/* Whether grant g still names its bucket: "" (it does), "gone" (no such
 * bucket) or "made again" (another bucket of the name); "?" when meta
 * could not say. `user show` asks; `user ls` does not (one call per
 * grant). */
static const char *grant_state(struct meta_client *c, uv_loop_t *loop,
			       const Iolake__Meta__BucketGrant *g)
{
	Iolake__Meta__GetBucketRequest q = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	q.name = g->bucket;
	Iolake__Meta__GetBucketResponse *r = NULL;
	int rc = call(c, loop, META_M_GET_BUCKET, &q.base, (ProtobufCMessage **)&r);
	const char *st = "?";
	if (rc == IOL_ENOT_FOUND || (!rc && r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND))
		st = "gone";
	else if (!rc && r->status == IOLAKE__META__STATUS__STATUS_OK && r->bucket)
		st = r->bucket->created_ms == g->bucket_created_ms ? "" : "made again";
	free_msg(r);
	return st;
}

static void print_user(const Iolake__Meta__User *u, bool json, bool detail, bool first, FILE *out,
		       const char *const *states)
{
	if (json) {
		fprintf(out, "%s{\"name\":", first ? "" : ",");
		admin_jstr(out, u->name);
		fprintf(out, ",\"admin\":%s,\"created_ms\":%" PRIu64 ",\"access_keys\":[",
			u->admin ? "true" : "false", u->created_ms);
		for (size_t j = 0; j < u->n_access_keys; j++) {
			fputs(j ? "," : "", out);
			admin_jstr(out, u->access_keys[j]);
		}
		fputs("],\"grants\":[", out);
		for (size_t j = 0; j < u->n_grants; j++) {
			fprintf(out, "%s{\"bucket\":", j ? "," : "");
			admin_jstr(out, u->grants[j]->bucket);
			fprintf(out, ",\"level\":\"%s\",\"bucket_created_ms\":%" PRIu64,
				level_name(u->grants[j]->level), u->grants[j]->bucket_created_ms);
			if (states)
				fprintf(out, ",\"stale\":%s", states[j][0] ? "true" : "false");
			fputc('}', out);
		}
		fputs("]}", out);
		return;
	}
	if (detail) {
		fprintf(out, "user:        %s\nadmin:       %s\ncreated_ms:  %" PRIu64 "\n"
			"access keys:", u->name, u->admin ? "yes" : "no", u->created_ms);
		for (size_t j = 0; j < u->n_access_keys; j++)
			fprintf(out, " %s", u->access_keys[j]);
		fprintf(out, "\ngrants:%s\n", u->n_grants ? "" : "      none");
		for (size_t j = 0; j < u->n_grants; j++)
			fprintf(out, "  %-40s %-6s (bucket created_ms %" PRIu64 ")%s%s\n",
				u->grants[j]->bucket, level_name(u->grants[j]->level),
				u->grants[j]->bucket_created_ms,
				states && states[j][0] ? " stale: bucket " : "",
				states && states[j][0] ? states[j] : "");
		return;
	}
	fprintf(out, "%-24s %-6s", u->name, u->admin ? "yes" : "no");
	for (size_t j = 0; j < u->n_access_keys; j++)
		fprintf(out, "%s%s", j ? "," : " ", u->access_keys[j]);
	if (!u->n_access_keys)
		fputs(" -", out);
	for (size_t j = 0; j < u->n_grants; j++)
		fprintf(out, "%s%s:%s", j ? "," : "  ", u->grants[j]->bucket,
			level_name(u->grants[j]->level));
	fputc('\n', out);
}

int admin_user_ls(struct meta_client *c, uv_loop_t *loop, const char *name, bool json,
		  FILE *out, FILE *err)
{
	Iolake__Meta__ListUsersRequest req = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	Iolake__Meta__ListUsersResponse *resp = NULL;
	int rc = call(c, loop, META_M_LIST_USERS, &req.base, (ProtobufCMessage **)&resp);
	if (rc) {
		fprintf(err, "iolake-admin: error: list users: %s\n", iol_strerror(rc));
		return 1;
	}
	if (name) {
		const Iolake__Meta__User *u = NULL;
		for (size_t i = 0; i < resp->n_users && !u; i++)
			if (!strcmp(resp->users[i]->name, name))
				u = resp->users[i];
		const char *states[64] = { 0 };
		for (size_t j = 0; u && j < u->n_grants && j < 64; j++)
			states[j] = grant_state(c, loop, u->grants[j]);
		if (u)
			print_user(u, json, true, true, out, u->n_grants <= 64 ? states : NULL);
		else
			fprintf(err, "iolake-admin: error: no user %s\n", name);
		if (u && json)
			fputc('\n', out);
		free_msg(resp);
		return u ? 0 : 1;
	}
	if (json)
		fputs("{\"users\":[", out);
	else
		fprintf(out, "%-24s %-6s %s\n", "NAME", "ADMIN", "ACCESS KEYS  GRANTS");
	for (size_t i = 0; i < resp->n_users; i++)
		print_user(resp->users[i], json, false, i == 0, out, NULL);
	if (json)
		fputs("]}\n", out);
	free_msg(resp);
	return 0;
}

/* ------------------------------------------------------------ grant, admin */

static int usage(FILE *err)
{
	fprintf(err, "usage: user grant NAME --bucket B (--read|--write|--full) | "
		"user revoke NAME --bucket B | user admin NAME on|off\n");
	return 2;
}

int admin_user_set(struct meta_client *c, uv_loop_t *loop, int nargs, char **args, bool json,
		   FILE *out, FILE *err)
{
	if (nargs < 3)
		return usage(err);
	const char *verb = args[0], *name = args[1];
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	Iolake__Meta__SetUserGrant g = IOLAKE__META__SET_USER_GRANT__INIT;
	Iolake__Meta__SetUserAdmin ad = IOLAKE__META__SET_USER_ADMIN__INIT;
	bool grant = !strcmp(verb, "grant");
	if (grant || !strcmp(verb, "revoke")) {
		const char *bucket = NULL;
		int level = grant ? -1 : IOLAKE__META__GRANT_LEVEL__GRANT_NONE;
		for (int i = 2; i < nargs; i++) {
			if (!strcmp(args[i], "--bucket") && i + 1 < nargs)
				bucket = args[++i];
			else if (!strncmp(args[i], "--bucket=", 9))
				bucket = args[i] + 9;
			else if (grant && level < 0 && !strcmp(args[i], "--read"))
				level = IOLAKE__META__GRANT_LEVEL__GRANT_READ;
			else if (grant && level < 0 && !strcmp(args[i], "--write"))
				level = IOLAKE__META__GRANT_LEVEL__GRANT_WRITE;
			else if (grant && level < 0 && !strcmp(args[i], "--full"))
				level = IOLAKE__META__GRANT_LEVEL__GRANT_FULL;
			else
				return usage(err);
		}
		if (!bucket || level < 0)
			return usage(err);
		g.user = (char *)name;
		g.bucket = (char *)bucket;
		g.level = (Iolake__Meta__GrantLevel)level;
		op.body_case = IOLAKE__META__OP__BODY_SET_USER_GRANT;
		op.set_user_grant = &g;
	} else if (!strcmp(verb, "admin") && nargs == 3 &&
		   (!strcmp(args[2], "on") || !strcmp(args[2], "off"))) {
		ad.user = (char *)name;
		ad.admin = !strcmp(args[2], "on");
		op.body_case = IOLAKE__META__OP__BODY_SET_USER_ADMIN;
		op.set_user_admin = &ad;
	} else {
		return usage(err);
	}
	Iolake__Meta__Status st;
	int rc = submit(c, loop, &op, &st);
	if (rc) {
		fprintf(err, "iolake-admin: error: user %s: %s\n", verb, iol_strerror(rc));
		return 1;
	}
	if (st != IOLAKE__META__STATUS__STATUS_OK) {
		const char *what = st == IOLAKE__META__STATUS__STATUS_NOT_FOUND
					   ? (grant ? "no such user or bucket" : "no such user")
					   : status_name(st);
		fprintf(err, "iolake-admin: error: user %s %s: %s\n", verb, name, what);
		return 1;
	}
	if (op.body_case == IOLAKE__META__OP__BODY_SET_USER_ADMIN) {
		if (json)
			fprintf(out, "{\"user\":\"%s\",\"admin\":%s}\n", name, ad.admin ? "true" : "false");
		else
			fprintf(out, "user %s: admin %s\n", name, ad.admin ? "on" : "off");
	} else if (json) {
		fprintf(out, "{\"user\":\"%s\",\"bucket\":\"%s\",\"level\":\"%s\"}\n", name, g.bucket,
			level_name(g.level));
	} else if (g.level == IOLAKE__META__GRANT_LEVEL__GRANT_NONE) {
		fprintf(out, "user %s: no grant on bucket %s\n", name, g.bucket);
	} else {
		fprintf(out, "user %s: %s on bucket %s\n", name, level_name(g.level), g.bucket);
	}
	return 0;
}

/* ------------------------------------------------------------ rekey */

int admin_user_rekey(struct meta_client *c, uv_loop_t *loop, bool json, FILE *out, FILE *err)
{
	Iolake__Meta__ListUsersRequest req = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	Iolake__Meta__ListUsersResponse *users = NULL;
	int rc = call(c, loop, META_M_LIST_USERS, &req.base, (ProtobufCMessage **)&users);
	if (rc) {
		fprintf(err, "iolake-admin: error: list users: %s\n", iol_strerror(rc));
		return 1;
	}
	unsigned sealed = 0, already = 0, failed = 0;
	for (size_t i = 0; i < users->n_users; i++) {
		const Iolake__Meta__User *u = users->users[i];
		for (size_t j = 0; j < u->n_access_keys; j++) {
			Iolake__Meta__GetAccessKeyRequest q = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
			q.access_key_id = u->access_keys[j];
			Iolake__Meta__GetAccessKeyResponse *r = NULL;
			rc = call(c, loop, META_M_GET_ACCESS_KEY, &q.base, (ProtobufCMessage **)&r);
			if (rc || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->key) {
				free_msg(r);
				continue;   /* removed meanwhile */
			}
			if (r->key->secret_sealed.len) {
				already++;
				free_msg(r);
				continue;
			}
			Iolake__Meta__ResealAccessKey rs = IOLAKE__META__RESEAL_ACCESS_KEY__INIT;
			rs.key = r->key;
			Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
			op.body_case = IOLAKE__META__OP__BODY_RESEAL_ACCESS_KEY;
			op.reseal_access_key = &rs;
			Iolake__Meta__Status st;
			rc = submit(c, loop, &op, &st);
			if (r->key->secret_key)
				explicit_bzero(r->key->secret_key, strlen(r->key->secret_key));
			free_msg(r);
			/* Read it back: a meta without --secret-key-file stores
			 * it in clear again. */
			r = NULL;
			if (!rc && st == IOLAKE__META__STATUS__STATUS_OK &&
			    !call(c, loop, META_M_GET_ACCESS_KEY, &q.base, (ProtobufCMessage **)&r) &&
			    r->key && r->key->secret_sealed.len) {
				sealed++;
			} else {
				failed++;
				fprintf(err, "iolake-admin: error: access key %s of %s: not sealed (%s)\n",
					q.access_key_id, u->name,
					rc ? iol_strerror(rc)
					   : st != IOLAKE__META__STATUS__STATUS_OK
						     ? status_name(st)
						     : "meta has no --secret-key-file");
			}
			if (r && r->key && r->key->secret_key)
				explicit_bzero(r->key->secret_key, strlen(r->key->secret_key));
			free_msg(r);
		}
	}
	free_msg(users);
	if (json)
		fprintf(out, "{\"sealed\":%u,\"already_sealed\":%u,\"failed\":%u}\n", sealed, already,
			failed);
	else
		fprintf(out, "sealed %u access key secret(s); %u already sealed; %u failed\n", sealed,
			already, failed);
	return failed ? 1 : 0;
}

/* ------------------------------------------------------------ init-key */

int admin_cluster_init_key(int nargs, char **args, FILE *out, FILE *err)
{
	const char *path = NULL;
	for (int i = 0; i < nargs; i++) {
		if (!strcmp(args[i], "--out") && i + 1 < nargs)
			path = args[++i];
		else if (!strncmp(args[i], "--out=", 6))
			path = args[i] + 6;
		else
			path = NULL, i = nargs;
	}
	if (!path) {
		fprintf(err, "usage: cluster init-key --out FILE\n");
		return 2;
	}
	char why[512];
	struct meta_secret s;
	int rc = meta_secret_create(path, why, sizeof(why));
	if (!rc)
		rc = meta_secret_load(path, &s, why, sizeof(why));
	if (rc) {
		fprintf(err, "iolake-admin: error: cluster init-key: %s\n", why);
		return 1;
	}
	char id[9];
	fprintf(out, "cluster key %s written to %s (mode 0600): give it to every iolake-meta "
		"and iolake-gw as --secret-key-file, and keep a copy apart from the data\n",
		meta_secret_id_str(s.key_id, id), path);
	meta_secret_wipe(&s);
	return 0;
}

/* ------------------------------------------------------------ add, rm */

/* `user add NAME [--access-key K --secret-key S]`: args after NAME. 0 and
 * *ak, *sk (NULL: generate), or 2 after printing what is wrong. */
static int user_add_args(const struct admin_ctx *x, int n, char **a, const char **ak,
			 const char **sk)
{
	*ak = *sk = NULL;
	for (int i = 0; i < n; i++) {
		const char **dst = NULL, *v = NULL;
		const char *names[2] = { "--access-key", "--secret-key" };
		for (int k = 0; k < 2 && !dst; k++) {
			size_t l = strlen(names[k]);
			if (!strncmp(a[i], names[k], l) && (a[i][l] == '=' || !a[i][l])) {
				dst = k ? sk : ak;
				v = a[i][l] == '=' ? a[i] + l + 1 : (i + 1 < n ? a[++i] : NULL);
			}
		}
		if (!dst || !v) {
			fprintf(x->err, "user add: %s %s\n", dst ? "no value for" : "unknown option",
				a[i]);
			return 2;
		}
		*dst = v;
	}
	if (!*ak != !*sk) {
		fprintf(x->err, "user add: give both --access-key and --secret-key, or neither\n");
		return 2;
	}
	const char *why;
	if (*ak && rootkey_check(*ak, *sk, &why)) {
		fprintf(x->err, "user add: %s\n", why);
		return 2;
	}
	return 0;
}

static int user_add(const struct admin_ctx *x, const char *name, const char *given_ak,
		    const char *given_sk)
{
	if (given_ak) {
		/* Refuse before the user is made: a key id in use stays its
		 * owner's (meta would answer EXISTS for the key alone). */
		Iolake__Meta__GetAccessKeyRequest q = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
		q.access_key_id = (char *)given_ak;
		int err;
		ProtobufCMessage *m = admin_try_call(x, META_M_GET_ACCESS_KEY, &q.base, &err);
		const Iolake__Meta__GetAccessKeyResponse *r = (const void *)m;
		bool taken = m && r->status == IOLAKE__META__STATUS__STATUS_OK && r->key;
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		if (err && err != IOL_ENOT_FOUND)
			admin_die_unreachable(x, err);
		if (taken) {
			fprintf(x->err, "add user: access key %s is already in use\n", given_ak);
			return 1;
		}
	}
	Iolake__Meta__User u = IOLAKE__META__USER__INIT;
	u.name = (char *)name;
	u.display_name = (char *)name;
	u.created_ms = (uint64_t)uv_now(x->loop);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	u.created_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	Iolake__Meta__PutUser pu = IOLAKE__META__PUT_USER__INIT;
	pu.user = &u;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op.put_user = &pu;
	Iolake__Meta__OpResult *r = admin_must_submit(x, &op);
	int rc = admin_check_result(x, "add user", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (rc)
		return rc;

	/* AWS-shaped credentials: a 20-char id, a 40-char secret. */
	char gen_id[ROOTKEY_GEN_ID_LEN + 1], gen_secret[ROOTKEY_GEN_SECRET_LEN + 1];
	rootkey_generate(gen_id, gen_secret);
	/* An imported key (a deployment's known credentials) must not take
	 * over another user's: meta answers EXISTS for a key id in use. */
	char *id = given_ak ? (char *)given_ak : gen_id;
	char *secret = given_sk ? (char *)given_sk : gen_secret;
	Iolake__Meta__AccessKey k = IOLAKE__META__ACCESS_KEY__INIT;
	k.access_key_id = id;
	k.secret_key = secret;
	k.user = (char *)name;
	k.created_ms = u.created_ms;
	Iolake__Meta__PutAccessKey pk = IOLAKE__META__PUT_ACCESS_KEY__INIT;
	pk.key = &k;
	Iolake__Meta__Op op2 = IOLAKE__META__OP__INIT;
	op2.body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
	op2.put_access_key = &pk;
	r = admin_must_submit(x, &op2);
	rc = admin_check_result(x, "add access key", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (rc)
		return rc;
	if (x->json) {
		fprintf(x->out, "{\"user\":");
		admin_jstr(x->out, name);
		fprintf(x->out, ",\"access_key\":\"%s\",\"secret_key\":\"%s\"}\n", id, secret);
	} else {
		fprintf(x->out, "user:       %s\naccess key: %s\nsecret key: %s\n", name, id, secret);
	}
	return 0;
}

static int user_rm(const struct admin_ctx *x, const char *name)
{
	Iolake__Meta__DeleteUser du = IOLAKE__META__DELETE_USER__INIT;
	du.name = (char *)name;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_USER;
	op.delete_user = &du;
	Iolake__Meta__OpResult *r = admin_must_submit(x, &op);
	int rc = admin_check_result(x, "remove user", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (!rc && !x->json)
		fprintf(x->out, "removed user %s\n", name);
	else if (!rc)
		fprintf(x->out, "{\"removed\":true}\n");
	return rc;
}

int admin_user(const struct admin_ctx *x, int nargs, char **args)
{
	const char *verb = args[0];
	if (!strcmp(verb, "add") && nargs >= 2) {
		const char *ak, *sk;
		int rc = user_add_args(x, nargs - 2, args + 2, &ak, &sk);
		return rc ? rc : user_add(x, args[1], ak, sk);
	}
	if (!strcmp(verb, "rm") && nargs == 2)
		return user_rm(x, args[1]);
	if (!strcmp(verb, "ls") && nargs == 1)
		return admin_user_ls(x->cli, x->loop, NULL, x->json, x->out, x->err);
	if (!strcmp(verb, "show") && nargs == 2)
		return admin_user_ls(x->cli, x->loop, args[1], x->json, x->out, x->err);
	if (!strcmp(verb, "rekey") && nargs == 1)
		return admin_user_rekey(x->cli, x->loop, x->json, x->out, x->err);
	if (!strcmp(verb, "grant") || !strcmp(verb, "revoke") || !strcmp(verb, "admin"))
		return admin_user_set(x->cli, x->loop, nargs, args, x->json, x->out, x->err);
	return ADMIN_UNKNOWN;
}
