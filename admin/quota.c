/*
 * quota.c — iolake-admin quota set|get|clear (contract in quota.h).
 *
 * set and clear submit SetQuota (meta/state_quota.c); get reads the
 * bucket record (GetBucket: meta fills in its usage and its owner's quota
 * and usage) or the user (ListUsers) and its buckets' usage (ListBuckets
 * by owner). Runs its calls one after another on the caller's loop. What
 * enforces a quota is the S3 gateway (gateway/s3_quota.c).
 */
#include "admin/quota.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/call.h"
#include "common/err.h"
#include "common/flags.h"

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

static void print_limit(FILE *out, const char *what, uint64_t v)
{
	char b[32];
	if (v)
		fprintf(out, "  %-12s %" PRIu64 "%s%s%s\n", what, v, strstr(what, "bytes") ? " (" : "",
			strstr(what, "bytes") ? flags_format_size(v, b, sizeof(b)) : "",
			strstr(what, "bytes") ? ")" : "");
	else
		fprintf(out, "  %-12s none\n", what);
}

static void print_quota(FILE *out, const char *title, const Iolake__Meta__Quota *q, bool json,
			bool comma)
{
	if (json) {
		fprintf(out, "%s\"%s\":", comma ? "," : "", title);
		if (q)
			fprintf(out, "{\"max_bytes\":%" PRIu64 ",\"max_objects\":%" PRIu64 "}",
				q->max_bytes, q->max_objects);
		else
			fprintf(out, "null");
		return;
	}
	fprintf(out, "%s:%s\n", title, q ? "" : " none");
	if (q) {
		print_limit(out, "max bytes", q->max_bytes);
		print_limit(out, "max objects", q->max_objects);
	}
}

static void print_usage(FILE *out, const char *title, const Iolake__Meta__Usage *u, bool json,
			bool comma)
{
	char b[32];
	if (json) {
		fprintf(out, "%s\"%s\":", comma ? "," : "", title);
		if (u)
			fprintf(out, "{\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64 "}", u->objects,
				u->bytes);
		else
			fprintf(out, "null");
		return;
	}
	if (u)
		fprintf(out, "%s: %" PRIu64 " objects, %" PRIu64 " bytes (%s)\n", title, u->objects,
			u->bytes, flags_format_size(u->bytes, b, sizeof(b)));
	else
		fprintf(out, "%s: not counted (the bucket's records live in range groups)\n", title);
}

static int get_bucket(struct meta_client *c, uv_loop_t *loop, const char *name, bool json,
		      FILE *out, FILE *err)
{
	Iolake__Meta__GetBucketRequest q = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	q.name = (char *)name;
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_call(c, META_M_GET_BUCKET, &q.base, admin_on_call, &w));
	const Iolake__Meta__GetBucketResponse *r = (const void *)w.resp;
	if (rc || !r || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->bucket) {
		fprintf(err, "iolake-admin: quota get: %s\n",
			rc ? iol_strerror(rc) : "no such bucket");
		free_msg(w.resp);
		return 1;
	}
	const Iolake__Meta__Bucket *b = r->bucket;
	if (json) {
		fprintf(out, "{\"bucket\":\"%s\",\"owner\":\"%s\"", b->name, b->owner);
		print_quota(out, "quota", b->quota, true, true);
		print_usage(out, "usage", b->usage, true, true);
		print_quota(out, "owner_quota", b->owner_quota, true, true);
		print_usage(out, "owner_usage", b->owner_usage, true, true);
		fprintf(out, "}\n");
	} else {
		fprintf(out, "bucket %s (owner %s)\n", b->name, b->owner);
		print_quota(out, "quota", b->quota, false, false);
		print_usage(out, "usage", b->usage, false, false);
		if (b->owner_quota) {
			print_quota(out, "owner's quota", b->owner_quota, false, false);
			print_usage(out, "owner's usage", b->owner_usage, false, false);
		}
	}
	free_msg(w.resp);
	return 0;
}

static int get_user(struct meta_client *c, uv_loop_t *loop, const char *name, bool json,
		    FILE *out, FILE *err)
{
	Iolake__Meta__ListUsersRequest q = IOLAKE__META__LIST_USERS_REQUEST__INIT;
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_call(c, META_M_LIST_USERS, &q.base, admin_on_call, &w));
	const Iolake__Meta__ListUsersResponse *r = (const void *)w.resp;
	const Iolake__Meta__User *u = NULL;
	for (size_t i = 0; !rc && r && i < r->n_users; i++)
		if (!strcmp(r->users[i]->name, name))
			u = r->users[i];
	if (rc || !u) {
		fprintf(err, "iolake-admin: quota get: %s\n", rc ? iol_strerror(rc) : "no such user");
		free_msg(w.resp);
		return 1;
	}
	Iolake__Meta__ListBucketsRequest bq = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	bq.owner = (char *)name;
	struct admin_wait bw = { 0 };
	rc = admin_run(loop, &bw, meta_client_call(c, META_M_LIST_BUCKETS, &bq.base, admin_on_call, &bw));
	const Iolake__Meta__ListBucketsResponse *br = (const void *)bw.resp;
	if (rc || !br) {
		fprintf(err, "iolake-admin: quota get: %s\n", iol_strerror(rc ? rc : -ENOMEM));
		free_msg(w.resp);
		free_msg(bw.resp);
		return 1;
	}
	Iolake__Meta__Usage sum = IOLAKE__META__USAGE__INIT;
	for (size_t i = 0; i < br->n_buckets; i++)
		if (br->buckets[i]->usage) {
			sum.objects += br->buckets[i]->usage->objects;
			sum.bytes += br->buckets[i]->usage->bytes;
		}
	if (json) {
		fprintf(out, "{\"user\":\"%s\"", u->name);
		print_quota(out, "quota", u->quota, true, true);
		print_usage(out, "usage", &sum, true, true);
		fprintf(out, ",\"buckets\":%zu}\n", br->n_buckets);
	} else {
		fprintf(out, "user %s (%zu buckets)\n", u->name, br->n_buckets);
		print_quota(out, "quota", u->quota, false, false);
		print_usage(out, "usage", &sum, false, false);
	}
	free_msg(w.resp);
	free_msg(bw.resp);
	return 0;
}

int admin_quota(struct meta_client *c, uv_loop_t *loop, int nargs, char **args, bool json,
		FILE *out, FILE *err)
{
	if (nargs < 1) {
		fprintf(err, "iolake-admin: quota set|get|clear (--bucket B | --user U) "
			     "[--max-bytes N] [--max-objects N]\n");
		return 2;
	}
	const char *verb = args[0], *bucket = NULL, *user = NULL;
	uint64_t max_bytes = 0, max_objects = 0;
	bool has_bytes = false, has_objects = false;
	for (int i = 1; i < nargs; i += 2) {   /* flag value pairs */
		const char *f = args[i], *v = i + 1 < nargs ? args[i + 1] : NULL;
		if (!v) {
			fprintf(err, "iolake-admin: quota: %s needs a value\n", f);
			return 2;
		}
		if (!strcmp(f, "--bucket")) {
			bucket = v;
		} else if (!strcmp(f, "--user")) {
			user = v;
		} else if (!strcmp(f, "--max-bytes")) {
			if (flags_parse_size(v, &max_bytes)) {
				fprintf(err, "iolake-admin: quota: --max-bytes %s: not a size\n", v);
				return 2;
			}
			has_bytes = true;
		} else if (!strcmp(f, "--max-objects")) {
			char *end;
			errno = 0;
			max_objects = strtoull(v, &end, 10);
			if (errno || end == v || *end || v[0] == '-') {
				fprintf(err, "iolake-admin: quota: --max-objects %s: not a count\n", v);
				return 2;
			}
			has_objects = true;
		} else {
			fprintf(err, "iolake-admin: quota: unknown flag %s\n", f);
			return 2;
		}
	}
	if (!bucket == !user) {
		fprintf(err, "iolake-admin: quota: give --bucket B or --user U (one of them)\n");
		return 2;
	}
	bool set = !strcmp(verb, "set"), clear = !strcmp(verb, "clear");
	if (!strcmp(verb, "get")) {
		if (has_bytes || has_objects) {
			fprintf(err, "iolake-admin: quota get takes no limits\n");
			return 2;
		}
		return bucket ? get_bucket(c, loop, bucket, json, out, err)
			      : get_user(c, loop, user, json, out, err);
	}
	if (!set && !clear) {
		fprintf(err, "iolake-admin: quota: unknown verb %s (set, get, clear)\n", verb);
		return 2;
	}
	if (set && !has_bytes && !has_objects) {
		fprintf(err, "iolake-admin: quota set: give --max-bytes, --max-objects or both\n");
		return 2;
	}
	if (clear && (has_bytes || has_objects)) {
		fprintf(err, "iolake-admin: quota clear takes no limits\n");
		return 2;
	}
	Iolake__Meta__Quota q = IOLAKE__META__QUOTA__INIT;
	q.max_bytes = max_bytes;
	q.max_objects = max_objects;
	Iolake__Meta__SetQuota sq = IOLAKE__META__SET_QUOTA__INIT;
	sq.user = user != NULL;
	sq.name = (char *)(user ? user : bucket);
	sq.quota = set ? &q : NULL;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_QUOTA;
	op.set_quota = &sq;
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_submit(c, &op, admin_on_submit, &w));
	if (rc || w.status != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(err, "iolake-admin: quota %s: %s\n", verb,
			rc ? iol_strerror(rc)
			   : w.status == IOLAKE__META__STATUS__STATUS_NOT_FOUND
				     ? (user ? "no such user" : "no such bucket")
				     : "refused (a bad name?)");
		return 1;
	}
	if (json)
		fprintf(out, "{\"%s\":\"%s\",\"quota\":", user ? "user" : "bucket", sq.name);
	if (json && set && (max_bytes || max_objects))
		fprintf(out, "{\"max_bytes\":%" PRIu64 ",\"max_objects\":%" PRIu64 "}}\n", max_bytes,
			max_objects);
	else if (json)
		fprintf(out, "null}\n");
	else
		fprintf(out, "quota of %s %s %s\n", user ? "user" : "bucket", sq.name,
			set && (max_bytes || max_objects) ? "set" : "cleared");
	return 0;
}
