/*
 * user.c — iolake-admin's user grant, revoke, admin, ls, show, rekey and
 * cluster init-key (contracts in user.h).
 *
 * Runs calls one after another on the caller's loop (it runs the loop
 * until each answers), as iolake-admin does. Owns nothing past a call.
 * Never prints a secret: `user add` (admin/main.c) is the one command that
 * does, once. rekey hands a clear secret back to meta in a
 * ResealAccessKey, whose receiving member seals it before proposing.
 */
#include "admin/user.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/call.h"
#include "common/err.h"
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

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
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
		jstr(out, u->name);
		fprintf(out, ",\"admin\":%s,\"created_ms\":%" PRIu64 ",\"access_keys\":[",
			u->admin ? "true" : "false", u->created_ms);
		for (size_t j = 0; j < u->n_access_keys; j++) {
			fputs(j ? "," : "", out);
			jstr(out, u->access_keys[j]);
		}
		fputs("],\"grants\":[", out);
		for (size_t j = 0; j < u->n_grants; j++) {
			fprintf(out, "%s{\"bucket\":", j ? "," : "");
			jstr(out, u->grants[j]->bucket);
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
