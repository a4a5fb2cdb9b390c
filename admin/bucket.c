/*
 * bucket.c — iolake-admin bucket ls (contract in bucket.h): the root's
 * bucket table (ListBuckets). Bucket quotas are admin/quota.c's.
 */
#include "admin/bucket.h"

#include <inttypes.h>
#include <string.h>

static int ls(const struct admin_ctx *x)
{
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	Iolake__Meta__ListBucketsResponse *resp =
		(Iolake__Meta__ListBucketsResponse *)admin_must_call(x, META_M_LIST_BUCKETS, &req.base);
	if (x->json)
		fprintf(x->out, "{\"buckets\":[");
	else
		fprintf(x->out, "%-40s %-20s\n", "NAME", "OWNER");
	for (size_t i = 0; i < resp->n_buckets; i++) {
		const Iolake__Meta__Bucket *b = resp->buckets[i];
		if (x->json) {
			fprintf(x->out, "%s{\"name\":", i ? "," : "");
			admin_jstr(x->out, b->name);
			fprintf(x->out, ",\"owner\":");
			admin_jstr(x->out, b->owner);
			fprintf(x->out, ",\"created_ms\":%" PRIu64 "}", b->created_ms);
		} else {
			fprintf(x->out, "%-40s %-20s\n", b->name, b->owner);
		}
	}
	if (x->json)
		fprintf(x->out, "]}\n");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return 0;
}


int admin_bucket(const struct admin_ctx *x, int nargs, char **args)
{
	if (nargs == 1 && !strcmp(args[0], "ls"))
		return ls(x);
	return ADMIN_UNKNOWN;
}
