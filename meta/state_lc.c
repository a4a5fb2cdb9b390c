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
 * must not make a concurrent PutBucketPolicy conflict.
 *
 * Deletes the worker makes are ordinary DeleteObject / AbortMultipart ops
 * (state.c, state_ver.c): nothing here deletes an object.
 * Thread: the apply thread, inside one apply (struct tx).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

#define LC_RULES_MAX 1000
#define LC_MARKER_MAX 1100     /* a key (1,024) and some: cursor strings */

static int load_bucket(struct tx *t, const char *name, struct key *k, Iolake__Meta__Bucket **b)
{
	k_init(k, 'B');
	k_str(k, name);
	return tx_get_msg(t, k, &iolake__meta__bucket__descriptor, (void **)b);
}

/* Write b, but only if it reads back: an op's messages may carry unknown
 * fields protobuf-c accepted on the way in but not on the way out (an
 * overlong tag naming field 0), and a bucket record that no longer
 * unpacks would stop every later op on the bucket (the apply fuzzer,
 * fuzz_meta_apply, found this). -EINVAL then, and nothing written. */
static int put_bucket(struct tx *t, const struct key *k, const Iolake__Meta__Bucket *b)
{
	size_t n = protobuf_c_message_get_packed_size(&b->base);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(&b->base, buf);
	Iolake__Meta__Bucket *back = iolake__meta__bucket__unpack(NULL, n, buf);
	free(buf);
	if (!back)
		return -EINVAL;
	iolake__meta__bucket__free_unpacked(back, NULL);
	return tx_put_msg(t, k, &b->base);
}

int meta_lc_set(struct tx *t, const Iolake__Meta__SetBucketLifecycle *op)
{
	if (!valid_bucket(op->name) || (op->config && op->config->n_rules > LC_RULES_MAX))
		return -EINVAL;
	struct key k;
	Iolake__Meta__Bucket *b = NULL;
	int rc = load_bucket(t, op->name, &k, &b);
	if (rc)
		return rc;
	/* Swap the new configuration in for the write, then back (b owns the old). */
	Iolake__Meta__LifecycleConfig *old = b->lifecycle;
	b->lifecycle = op->config && op->config->n_rules ? op->config : NULL;
	rc = put_bucket(t, &k, b);
	b->lifecycle = old;
	meta_state_free_msg(b);
	return rc;
}

static bool str_ok(const char *s)
{
	return s && strlen(s) <= LC_MARKER_MAX;
}

int meta_lc_advance(struct tx *t, const Iolake__Meta__LifecycleAdvance *op)
{
	const Iolake__Meta__LifecycleCursor *nc = op->cursor;
	if (!valid_bucket(op->name) || !nc || !str_ok(op->holder) || !op->holder[0] ||
	    !str_ok(nc->route_key) || !str_ok(nc->key_marker) || !str_ok(nc->version_marker) ||
	    !str_ok(nc->upload_marker) || nc->phase > 1)
		return -EINVAL;
	struct key k;
	Iolake__Meta__Bucket *b = NULL;
	int rc = load_bucket(t, op->name, &k, &b);
	if (rc)
		return rc;
	const Iolake__Meta__LifecycleCursor *cur = b->lc_cursor;
	uint64_t seq = cur ? cur->seq : 0;
	bool held = cur && cur->holder[0] && strcmp(cur->holder, op->holder) != 0 &&
		    cur->lease_until_ms > op->now_ms;
	if (seq != op->if_seq || held) {
		meta_state_free_msg(b);
		return IOL_ECONFLICT;
	}
	Iolake__Meta__LifecycleCursor next = *nc;
	next.seq = seq + 1;
	next.holder = op->holder;
	next.lease_until_ms = op->lease_ms ? op->now_ms + op->lease_ms : 0;
	Iolake__Meta__LifecycleCursor *old = b->lc_cursor;
	b->lc_cursor = &next;
	rc = put_bucket(t, &k, b);
	b->lc_cursor = old;
	meta_state_free_msg(b);
	return rc;
}
