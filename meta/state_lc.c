/*
 * state_lc.c — bucket lifecycle in the state machine (issue 17), root
 * group: SetBucketLifecycle stores or clears a bucket's configuration
 * (Bucket.lifecycle, checked by the gateway's lc_rule; here only bounded),
 * and LifecycleAdvance moves the lifecycle worker's cursor through the
 * bucket (Bucket.lc_cursor), conditioned on the cursor's seq and on the
 * lease of the worker holding it, so that one worker at a time works a
 * bucket and a restart resumes after the last batch committed.
 *
 * Neither op changes the bucket's generation: they do not touch what
 * SetBucketAccess's optimistic updates decide on, and the worker's steps
 * must not make a concurrent PutBucketPolicy conflict. Nor does the
 * cursor count in the bucket's digest (state_obj.c): a batch leaves the
 * gateways' cached copies of the bucket good.
 *
 * Both are read-modify-writes of the bucket row through
 * bucket_config_update (state_bucket.c).
 *
 * Deletes the worker makes are ordinary DeleteObject / AbortMultipart ops
 * (state.c, state_ver.c): nothing here deletes an object.
 * Thread: the apply thread, inside one apply (struct tx).
 */
#include <errno.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

#define LC_RULES_MAX 1000
#define LC_MARKER_MAX 1100     /* a key (1,024) and some: cursor strings */

static int edit_lifecycle(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const Iolake__Meta__SetBucketLifecycle *op = arg;
	b->lifecycle = op->config && op->config->n_rules ? op->config : NULL;
	return 0;
}

int meta_lc_set(struct tx *t, const Iolake__Meta__SetBucketLifecycle *op)
{
	if (!valid_bucket(op->name) || (op->config && op->config->n_rules > LC_RULES_MAX))
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_lifecycle, op);
}

static bool str_ok(const char *s)
{
	return s && strlen(s) <= LC_MARKER_MAX;
}

/* An advance and the cursor it writes (which the bucket points at until
 * bucket_config_update has written it). */
struct advance {
	const Iolake__Meta__LifecycleAdvance *op;
	Iolake__Meta__LifecycleCursor next;
};

static int edit_cursor(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	struct advance *a = (struct advance *)arg;
	const Iolake__Meta__LifecycleAdvance *op = a->op;
	const Iolake__Meta__LifecycleCursor *cur = b->lc_cursor;
	uint64_t seq = cur ? cur->seq : 0;
	bool held = cur && cur->holder[0] && strcmp(cur->holder, op->holder) != 0 &&
		    cur->lease_until_ms > op->now_ms;
	if (seq != op->if_seq || held)
		return IOL_ECONFLICT;
	a->next = *op->cursor;
	a->next.seq = seq + 1;
	a->next.holder = op->holder;
	a->next.lease_until_ms = op->lease_ms ? op->now_ms + op->lease_ms : 0;
	b->lc_cursor = &a->next;
	return 0;
}

int meta_lc_advance(struct tx *t, const Iolake__Meta__LifecycleAdvance *op)
{
	const Iolake__Meta__LifecycleCursor *nc = op->cursor;
	if (!valid_bucket(op->name) || !nc || !str_ok(op->holder) || !op->holder[0] ||
	    !str_ok(nc->route_key) || !str_ok(nc->key_marker) || !str_ok(nc->version_marker) ||
	    !str_ok(nc->upload_marker) || nc->phase > 1)
		return -EINVAL;
	struct advance a = { .op = op };
	return bucket_config_update(t, op->name, edit_cursor, &a);
}
