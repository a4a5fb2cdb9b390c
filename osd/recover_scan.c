/*
 * recover_scan.c — the scans and rebuilds of the recovery driver (see
 * recover.h and docs/architecture.md, "Recovery"): per scan slot, the
 * BAD / COUNT / REBUILD phases over the listings of the PG's up OSDs, the
 * rebuild jobs (GetShard k sources, check, ec_decode, check the other
 * present shards, PutShard the missing), and the token bucket that paces
 * them.
 *
 * A scan runs three phases against one signature (the PG's slot OSDs and
 * up flags when it started):
 *   BAD    page ListBadShards of every up slot's OSD from pg p on: those
 *          shards count as missing;
 *   COUNT  page ListShards(p) of every up slot's OSD and merge the pages by
 *          object id (k-way merge, one page per OSD in memory): counts the
 *          stripes, the ones to rebuild, their bytes and the unfound;
 *   REBUILD (only when COUNT found something) the same merge again, each
 *          rebuildable stripe handed to a job;
 *   DEEP   (only in a scan asked for one, when COUNT found nothing to
 *          rebuild) the merge again, each stripe with all k+m shards
 *          handed to a deep job: GetShard all, crc-check each, re-encode
 *          the data, and when the parity differs find the one shard whose
 *          exclusion leaves the rest consistent and PutShard its decoded
 *          bytes (none found: logged, counted, nothing written).
 * Invariant: shard i counts only on slot i's OSD; nothing is written
 * unless k sources and every other present shard agree (crc32c; for a
 * deep repair: the k+m-1 other shards are one codeword), and no
 * new call starts once the PG's signature moved, a call failed or the
 * driver stops: the scan winds down (calls in flight finish) and the PG is
 * retried.
 *
 * Thread: the OSD's loop. Does not: delete anything, touch the local store
 * directly (its own OSD is reached over RPC like the others).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc.h"
#include "common/log.h"
#include "common/shard_oid.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "osd/recover_int.h"

static void scan_step(struct scan *s);
static void job_end(struct job *j);

/* ------------------------------------------------------------ token bucket */

static void refill(struct osd_recover *r)
{
	uint64_t now = loop_now_ms();
	double burst = (double)r->o.rate_bytes / 4; /* 250 ms worth */
	r->tokens += (double)(now - r->tokens_ms) * (double)r->o.rate_bytes / 1000.0;
	if (r->tokens > burst)
		r->tokens = burst;
	r->tokens_ms = now;
}

static void job_start_gets(struct job *j);
static void on_wake(uv_timer_t *t);

static void wake_waiters(struct osd_recover *r)
{
	refill(r);
	while (r->wait_head && r->tokens >= 0) {
		struct job *j = r->wait_head;
		r->wait_head = j->next_wait;
		if (!r->wait_head)
			r->wait_tail = NULL;
		j->waiting = false;
		/* Debt allowed: a stripe larger than the burst still goes, and
		 * the next waits the longer. */
		r->tokens -= (double)j->cost;
		job_start_gets(j);
	}
	if (r->wait_head && !r->stopping) {
		uint64_t ms = (uint64_t)(-r->tokens * 1000.0 / (double)r->o.rate_bytes) + 1;
		uv_timer_start(&r->wake, on_wake, ms, 0);
	}
}


static void on_wake(uv_timer_t *t)
{
	wake_waiters(t->data);
}

static void throttle(struct job *j)
{
	struct osd_recover *r = j->s->r;
	if (!r->o.rate_bytes) {
		job_start_gets(j);
		return;
	}
	j->waiting = true;
	j->next_wait = NULL;
	if (r->wait_tail)
		r->wait_tail->next_wait = j;
	else
		r->wait_head = j;
	r->wait_tail = j;
	if (r->wait_head == j) {
		refill(r);
		if (r->tokens >= 0) {
			wake_waiters(r);
		} else {
			uint64_t ms = (uint64_t)(-r->tokens * 1000.0 / (double)r->o.rate_bytes) + 1;
			uv_timer_start(&r->wake, on_wake, ms, 0);
		}
	}
}

/* ------------------------------------------------------------ jobs */

static bool call_ok_or_fail_scan(struct scan *s, int status)
{
	if (status == RPC_OK)
		return true;
	/* A peer that does not answer, is busy, going away or closed: the
	 * scan stops here and the PG is retried with backoff. */
	if (status == RPC_UNAVAILABLE || status == RPC_DEADLINE_EXCEEDED ||
	    status == RPC_CANCELLED || status == RPC_RESOURCE_EXHAUSTED)
		s->failed = true;
	return false;
}

static bool scan_winding(const struct scan *s)
{
	return s->failed || s->superseded || s->r->stopping;
}

static struct rpc_channel *chan(struct scan *s, uint32_t slot)
{
	if (s->r->stopping)
		return NULL;
	return meta_mapwatch_channel(s->r->mw, s->sig.osds[slot]);
}

static void job_puts(struct job *j);
static void job_deep(struct job *j);

static void on_get(void *ud, const struct rpc_result *res)
{
	struct getctx *c = ud;
	struct job *j = c->j;
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	j->pending--;
	uint32_t bit = 1u << c->slot;
	if (res->status == RPC_NOT_FOUND) {
		j->gone = true;
	} else if (!call_ok_or_fail_scan(s, res->status)) {
		if (!s->failed) {
			/* DATA_LOSS and the like: a bad source; others may do,
			 * and it is rewritten with the missing ones. */
			j->bad_src |= bit;
			r->st.errors++;
			metrics_counter_inc(r->m_errors);
		}
	} else {
		const Iolake__Osd__GetShardResponse *g = (const void *)res->resp;
		const uint8_t *data = buf_slice_data(&res->payload);
		size_t plen = res->payload.len;
		bool ok = g->info && plen == j->len && g->length == j->len && g->offset == 0;
		if (ok) {
			uint32_t crc = crc32c(0, data, plen);
			ok = crc == g->range_crc32c && crc == g->info->crc32c && crc == j->crc[c->slot];
		}
		if (ok) {
			if (plen)
				memcpy(j->buf->data + (size_t)c->slot * j->len, data, plen);
			j->fetched |= bit;
			if (j->deep) {
				r->st.deep_bytes += plen;
				metrics_counter_add(r->m_deep_bytes, plen);
			}
		} else {
			j->bad_src |= bit;
			r->st.errors++;
			metrics_counter_inc(r->m_errors);
			LOG_WARN("recovery source failed its checks", "osd=%u pg=%u slot=%u",
				 r->osd_id, s->pg, c->slot);
		}
	}
	if (j->pending)
		return;
	job_start_gets(j); /* more sources, or decode */
}

/* Ask for sources until k are fetched; then decode, verify and put. */
static void job_start_gets(struct job *j)
{
	struct scan *s = j->s;
	if (scan_winding(s) || j->gone) {
		/* Deleted meanwhile (an orphan otherwise), or winding down. */
		if (!j->pending)
			job_end(j);
		return;
	}
	unsigned k = s->k, have = popcount(j->fetched);
	if (j->deep && !j->pending && (j->tried & j->present) == j->present &&
	    have < popcount(j->present)) {
		/* A shard failed its crc32c (or its read): not deep scrub's to
		 * judge; the stripe becomes a rebuild of that shard, as a scan
		 * of its bad-shard record would make it. */
		j->deep = false;
	}
	unsigned need = j->deep ? popcount(j->present) : k;
	if (have >= need) {
		if (j->deep)
			job_deep(j);
		else
			job_puts(j);
		return;
	}
	unsigned want = need - have;
	/* Data slots first: with all k data shards no decode is needed for
	 * them (ec_decode then only recomputes parity). */
	for (uint32_t i = 0; i < s->sig.width && want; i++) {
		uint32_t bit = 1u << i;
		if (!(j->present & bit) || (j->tried & bit))
			continue;
		struct rpc_channel *ch = chan(s, i);
		if (!ch)
			continue;
		j->tried |= bit;
		want--;
		j->ctx[i].j = j;
		j->ctx[i].slot = (uint8_t)i;
		Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
		key.pg = s->pg;
		key.object_id.data = j->oid;
		key.object_id.len = j->oid_len;
		key.shard = i;
		Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
		q.key = &key;
		q.background = true;
		struct rpc_call_opts co = { .timeout_ms = s->r->o.rpc_timeout_ms };
		j->pending++;
		rpc_call(ch, OSD_SVC, OSD_M_GET, &q.base, NULL, &co, on_get, &j->ctx[i]);
	}
	if (!j->pending) {
		/* Fewer than k good sources left: the stripe stays missing. */
		j->failed = true;
		job_end(j);
	}
}

static void on_put(void *ud, const struct rpc_result *res)
{
	struct getctx *c = ud;
	struct job *j = c->j;
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	j->pending--;
	if (res->status == RPC_OK && j->deep) {
		r->st.deep_repaired++;
		s->deep_repaired++;
		metrics_counter_inc(r->m_deep_repaired);
	} else if (res->status == RPC_OK) {
		struct pgst *p = s->pg < r->n_pgs ? &r->pgs[s->pg] : NULL;
		r->st.bytes += j->len;
		metrics_counter_add(r->m_bytes, j->len);
		if (p) {
			p->bytes_done += j->len;
			p->bytes_missing -= p->bytes_missing >= j->len ? j->len : p->bytes_missing;
		}
	} else {
		j->failed = true;
		if (!call_ok_or_fail_scan(s, res->status)) {
			r->st.errors++;
			metrics_counter_inc(r->m_errors);
		}
		LOG_WARN("recovery put failed", "osd=%u pg=%u slot=%u to=%u status=%s msg=%s",
			 r->osd_id, s->pg, c->slot, s->sig.osds[c->slot],
			 rpc_status_name(res->status), LOG_Q(res->message));
	}
	if (!j->pending)
		job_end(j);
}

static void job_put_slots(struct job *j, uint32_t to);

static void job_puts(struct job *j)
{
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	uint32_t width = s->sig.width, all = (width >= 32 ? ~0u : (1u << width) - 1);
	uint8_t *shards[EC_MAX_SHARDS];
	for (uint32_t i = 0; i < width; i++)
		shards[i] = j->buf->data + (size_t)i * j->len;
	uint32_t want = all & ~j->fetched;
	if (j->len && want && ec_decode(r->ec, j->len, shards, j->fetched, want)) {
		j->failed = true;
		job_end(j);
		return;
	}
	/* Every present shard not used as a source must agree with the
	 * decode: else the stripe is inconsistent and nothing is written. */
	uint32_t check = j->present & ~j->fetched & ~j->bad_src;
	for (uint32_t i = 0; i < width; i++) {
		if (!(check >> i & 1))
			continue;
		if (crc32c(0, shards[i], j->len) != j->crc[i]) {
			char hex[2 * 64 + 1];
			for (unsigned b = 0; b < j->oid_len; b++)
				snprintf(hex + 2 * b, 3, "%02x", j->oid[b]);
			LOG_WARN("inconsistent stripe: not rebuilt", "osd=%u pg=%u object=%s slot=%u",
				 r->osd_id, s->pg, hex, i);
			s->errors++;
			r->st.errors++;
			metrics_counter_inc(r->m_errors);
			j->failed = true;
			job_end(j);
			return;
		}
	}
	/* A source that turned out bad is missing too (its OSD is up: it
	 * listed it); rewrite it. */
	job_put_slots(j, j->missing | (j->bad_src & j->present));
}

/* PutShard slot i's bytes (in j->buf) to slot i's OSD, for every bit of
 * to, with their crc32c; the job ends with the last answer. */
static void job_put_slots(struct job *j, uint32_t to)
{
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	uint32_t width = s->sig.width;
	for (uint32_t i = 0; i < width; i++) {
		const uint8_t *shard = j->buf->data + (size_t)i * j->len;
		if (!(to >> i & 1))
			continue;
		struct rpc_channel *ch = chan(s, i);
		if (!ch) {
			j->failed = true;
			continue;
		}
		j->ctx[i].j = j;
		j->ctx[i].slot = (uint8_t)i;
		Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
		key.pg = s->pg;
		key.object_id.data = j->oid;
		key.object_id.len = j->oid_len;
		key.shard = i;
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		q.key = &key;
		q.length = j->len;
		q.background = true;
		q.map_epoch = s->epoch;   /* rebuilt onto the slots of this map */
		q.crc32c = crc32c(0, shard, j->len);
		struct buf_slice pl = { .buf = j->len ? j->buf : NULL,
					.off = (size_t)i * j->len, .len = j->len };
		struct rpc_call_opts co = { .timeout_ms = r->o.rpc_timeout_ms };
		j->pending++;
		rpc_call(ch, OSD_SVC, OSD_M_PUT, &q.base, j->len ? &pl : NULL, &co, on_put,
			 &j->ctx[i]);
	}
	if (!j->pending)
		job_end(j);
}

static void hex_oid(const struct job *j, char out[2 * 64 + 1])
{
	out[0] = 0;
	for (unsigned b = 0; b < j->oid_len; b++)
		snprintf(out + 2 * b, 3, "%02x", j->oid[b]);
}

/* Every shard fetched and crc-checked: are they one codeword? One shard
 * that disagrees with the other k+m-1 is rewritten with the bytes they
 * decode to; a stripe no single shard explains is logged and left. */
static void job_deep(struct job *j)
{
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	uint32_t width = s->sig.width;
	const uint8_t *shards[EC_MAX_SHARDS];
	for (uint32_t i = 0; i < width; i++)
		shards[i] = j->buf->data + (size_t)i * j->len;
	uint8_t *scratch = j->buf->data + (size_t)width * j->len;
	unsigned bad = 0;
	int rc = osd_recover_deep_check(r->ec, j->len, shards, scratch, &bad);
	char hex[2 * 64 + 1];
	if (rc == OSD_RECOVER_DEEP_OK) {
		job_end(j);
		return;
	}
	hex_oid(j, hex);
	if (rc == OSD_RECOVER_DEEP_ONE) {
		LOG_WARN("deep scrub: a shard disagrees with the rest of its stripe; rewriting it",
			 "osd=%u pg=%u object=%s slot=%u to=%u", r->osd_id, s->pg, hex, bad,
			 s->sig.osds[bad]);
		memcpy(j->buf->data + (size_t)bad * j->len, scratch, j->len);
		job_put_slots(j, 1u << bad);
		return;
	}
	LOG_ERROR("deep scrub: inconsistent stripe, no single shard explains it; nothing written",
		  "osd=%u pg=%u object=%s len=%" PRIu64 " rc=%d", r->osd_id, s->pg, hex, j->len, rc);
	r->st.deep_inconsistent++;
	s->deep_inconsistent++;
	metrics_counter_inc(r->m_deep_inconsistent);
	job_end(j);
}

static void job_end(struct job *j)
{
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	if (j->deep) {
		if (j->failed && !j->gone && !scan_winding(s))
			s->deep_failed++;
		if (!j->failed && !j->gone && !scan_winding(s)) {
			r->st.deep_stripes++;
			s->deep_stripes++;
			metrics_counter_inc(r->m_deep_stripes);
		}
	} else if (j->failed && !j->gone && !scan_winding(s)) {
		s->failed_stripes++;
	}
	if (!j->deep && !j->failed && !j->gone && !scan_winding(s)) {
		r->st.stripes++;
		metrics_counter_inc(r->m_stripes);
		if (s->pg < r->n_pgs) {
			struct pgst *p = &r->pgs[s->pg];
			p->stripes_done++;
			if (p->stripes_missing)
				p->stripes_missing--;
		}
	}
	buf_unref(j->buf);
	j->buf = NULL;
	j->used = false;
	s->jobs--;
	if (!s->in_step)
		scan_step(s);
}

/* Hand one rebuildable stripe to a free job. */
static void job_launch(struct scan *s, const uint8_t *oid, uint8_t oid_len, uint64_t len,
		       uint32_t present, uint32_t missing, const uint32_t *crc, bool deep)
{
	struct job *j = NULL;
	for (uint32_t i = 0; i < s->r->o.stripes_inflight; i++)
		if (!s->job[i].used) {
			j = &s->job[i];
			break;
		}
	if (!j)
		return; /* cannot happen: the caller checked s->jobs */
	memset(j, 0, sizeof(*j));
	j->s = s;
	j->used = true;
	memcpy(j->oid, oid, oid_len);
	j->oid_len = oid_len;
	j->len = len;
	j->present = present;
	j->missing = missing;
	memcpy(j->crc, crc, sizeof(j->crc));
	j->deep = deep;
	/* Rebuilds are charged the bytes they write, deep scrubs the bytes
	 * they read (every shard). */
	j->cost = deep ? len * popcount(present) : len * popcount(missing);
	/* A deep scrub also needs (m + 1) shards of scratch for its check. */
	size_t bytes = (size_t)(s->sig.width + (deep ? s->m + 1 : 0)) * len;
	j->buf = buf_new(bytes ? bytes : 1);
	s->jobs++;
	if (!j->buf) {
		j->failed = true;
		job_end(j);
		return;
	}
	throttle(j);
}

/* ------------------------------------------------------------ listings */

static void copy_after(struct cursor *c, const Iolake__Osd__ShardKey *k)
{
	c->after_pg = k->pg;
	c->after_shard = k->shard;
	c->after_len = (uint8_t)(k->object_id.len <= 64 ? k->object_id.len : 64);
	memcpy(c->after_oid, k->object_id.data, c->after_len);
}

static void on_list(void *ud, const struct rpc_result *res)
{
	struct cursor *c = ud;
	struct scan *s = c->s;
	s->pending--;
	c->pending = false;
	if (!call_ok_or_fail_scan(s, res->status)) {
		s->failed = true; /* a listing we cannot get: no merge */
		scan_step(s);
		return;
	}
	const Iolake__Osd__ListShardsResponse *l = (const void *)res->resp;
	c->n = c->idx = 0;
	for (size_t i = 0; i < l->n_shards; i++) {
		const Iolake__Osd__ShardInfo *si = l->shards[i];
		if (!si->key || si->key->object_id.len < 1 || si->key->object_id.len > 64)
			continue;
		if (si->key->shard != c->slot || si->key->pg != s->pg)
			continue; /* another slot's shard: a stray, not ours */
		struct ent *e = &c->ents[c->n++];
		e->oid_len = (uint8_t)si->key->object_id.len;
		memcpy(e->oid, si->key->object_id.data, e->oid_len);
		e->crc = si->crc32c;
		e->len = si->length;
	}
	c->more = l->more && l->n_shards > 0;
	if (l->n_shards && l->shards[l->n_shards - 1]->key)
		copy_after(c, l->shards[l->n_shards - 1]->key);
	scan_step(s);
}

static void list_next(struct scan *s, struct cursor *c)
{
	struct rpc_channel *ch = chan(s, c->slot);
	if (!ch) {
		s->failed = true;
		return;
	}
	Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
	Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
	q.pg = s->pg;
	q.limit = PAGE_LIMIT;
	if (c->started) {
		after.pg = c->after_pg;
		after.shard = c->after_shard;
		after.object_id.data = c->after_oid;
		after.object_id.len = c->after_len;
		q.after = &after;
	}
	c->started = true;
	c->pending = true;
	s->pending++;
	struct rpc_call_opts co = { .timeout_ms = s->r->o.rpc_timeout_ms };
	rpc_call(ch, OSD_SVC, OSD_M_LIST, &q.base, NULL, &co, on_list, c);
}

static void on_list_bad(void *ud, const struct rpc_result *res)
{
	struct cursor *c = ud;
	struct scan *s = c->s;
	s->pending--;
	c->pending = false;
	if (!call_ok_or_fail_scan(s, res->status)) {
		s->failed = true;
		scan_step(s);
		return;
	}
	const Iolake__Osd__ListBadShardsResponse *l = (const void *)res->resp;
	bool past = false;
	for (size_t i = 0; i < l->n_shards; i++) {
		const Iolake__Osd__ShardKey *k = l->shards[i]->key;
		if (!k || k->object_id.len < 1 || k->object_id.len > 64)
			continue;
		if (k->pg > s->pg) {
			past = true;
			break;
		}
		if (k->pg != s->pg || k->shard != c->slot || s->n_bads >= BAD_MAX)
			continue;
		struct bad *b = &s->bads[s->n_bads++];
		b->oid_len = (uint8_t)k->object_id.len;
		memcpy(b->oid, k->object_id.data, b->oid_len);
		b->slot = c->slot;
	}
	c->more = !past && l->more && l->n_shards > 0;
	if (l->n_shards && l->shards[l->n_shards - 1]->key)
		copy_after(c, l->shards[l->n_shards - 1]->key);
	scan_step(s);
}

static void list_bad_next(struct scan *s, struct cursor *c)
{
	struct rpc_channel *ch = chan(s, c->slot);
	if (!ch) {
		s->failed = true;
		return;
	}
	static const uint8_t max_oid[64] = {
		[0 ... 63] = 0xff,
	};
	Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
	Iolake__Osd__ListBadShardsRequest q = IOLAKE__OSD__LIST_BAD_SHARDS_REQUEST__INIT;
	q.limit = PAGE_LIMIT;
	if (c->started) {
		after.pg = c->after_pg;
		after.shard = c->after_shard;
		after.object_id.data = c->after_oid;
		after.object_id.len = c->after_len;
		q.after = &after;
	} else if (s->pg > 0) {
		/* The greatest key of pg-1: the listing starts at pg. */
		after.pg = s->pg - 1;
		after.shard = 255;
		after.object_id.data = (uint8_t *)max_oid;
		after.object_id.len = 64;
		q.after = &after;
	}
	c->started = true;
	c->pending = true;
	s->pending++;
	struct rpc_call_opts co = { .timeout_ms = s->r->o.rpc_timeout_ms };
	rpc_call(ch, OSD_SVC, OSD_M_LIST_BAD, &q.base, NULL, &co, on_list_bad, c);
}

static bool is_bad(const struct scan *s, const uint8_t *oid, uint8_t len, uint32_t slot)
{
	for (size_t i = 0; i < s->n_bads; i++)
		if (s->bads[i].slot == slot && s->bads[i].oid_len == len &&
		    memcmp(s->bads[i].oid, oid, len) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------ scans */

static void reset_cursors(struct scan *s)
{
	for (uint32_t i = 0; i < s->sig.width; i++) {
		struct cursor *c = &s->cur[i];
		c->n = c->idx = 0;
		c->more = c->active;
		c->started = false;
		c->pending = false;
	}
}

static const char *active_state(const struct scan *s)
{
	if (s->phase != PH_REBUILD)
		return "scanning";
	return s->recovering ? "recovering" : "backfilling";
}

static bool full_sig(const struct osd_recover_sig *sg)
{
	bool full = popcount(sg->up_mask) == sg->width;
	for (uint32_t i = 0; i < sg->width; i++)
		full &= sg->osds[i] != OSD_RECOVER_NONE;
	return full;
}

static void scan_free(struct scan *s)
{
	for (uint32_t i = 0; i < 16; i++) {
		free(s->cur[i].ents);
		s->cur[i].ents = NULL;
	}
	free(s->bads);
	s->bads = NULL;
	free(s->unf_ids);
	s->unf_ids = NULL;
	s->used = false;
}

static void scan_finish(struct scan *s)
{
	struct osd_recover *r = s->r;
	uint64_t now = loop_now_ms();
	struct pgst *p = s->pg < r->n_pgs ? &r->pgs[s->pg] : NULL;
	if (p) {
		p->active = false;
		if (r->stopping) {
			/* nothing */
		} else if (s->superseded) {
			p->queued = p->primary;
			p->retry_at_ms = 0;
		} else if (s->failed) {
			p->queued = true;
			p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : RETRY_MIN_MS;
			if (p->backoff_ms > RETRY_MAX_MS)
				p->backoff_ms = RETRY_MAX_MS;
			p->retry_at_ms = now + p->backoff_ms;
			LOG_INFO("pg scan stopped; retrying later", "osd=%u pg=%u retry_ms=%u",
				 r->osd_id, s->pg, p->backoff_ms);
		} else {
			r->st.scans++;
			p->backoff_ms = 0;
			p->last_scan_end_ms = now;
			if (s->unf_asked && p->unfound_live) {
				/* Live objects unreadable: look again (a PUT that
				 * landed between two listings looks so too). */
				p->unfound_backoff_ms = p->unfound_backoff_ms
					? p->unfound_backoff_ms * 2 : UNFOUND_RETRY_MIN_MS;
				if (p->unfound_backoff_ms > UNFOUND_RETRY_MAX_MS)
					p->unfound_backoff_ms = UNFOUND_RETRY_MAX_MS;
				LOG_WARN("pg has unfound stripes of live objects", "osd=%u pg=%u"
					 " unfound=%" PRIu64 " live=%" PRIu64 " rescan_ms=%u",
					 r->osd_id, s->pg, p->unfound, p->unfound_live,
					 p->unfound_backoff_ms);
			} else if (s->unf_asked || !p->unfound) {
				p->unfound_backoff_ms = 0;
			}
			bool full = full_sig(&s->sig);
			if (s->phase == PH_DEEP) {
				/* Done: next one an interval on; a stripe whose
				 * repair did not complete is looked at again
				 * after a minute. */
				p->deep_wanted = s->deep_failed != 0;
				p->deep_due_ms = now + (s->deep_failed ? ERROR_RETRY_MS
								       : r->o.deep_scrub_ms);
				p->last_deep_ms = unix_ms();
				r->st.deep_pgs++;
				r->st.deep_last_unix_ms = p->last_deep_ms;
				metrics_counter_inc(r->m_deep_pgs);
				LOG_INFO("pg deep-scrubbed", "osd=%u pg=%u stripes=%" PRIu64
					 " repaired=%" PRIu64 " inconsistent=%" PRIu64 " failed=%" PRIu64,
					 r->osd_id, s->pg, s->deep_stripes, s->deep_repaired,
					 s->deep_inconsistent, s->deep_failed);
			}
			if (s->phase == PH_REBUILD) {
				/* What is left: rebuilds that did not complete
				 * (stripes deleted meanwhile are not owed). */
				p->stripes_missing = s->failed_stripes;
				if (!s->failed_stripes)
					p->bytes_missing = 0;
			}
			if (s->count_only && p->stripes_missing && !s->errors) {
				/* Sized; the rebuild comes once every queued PG
				 * of this OSD is (pump). */
				p->counted = true;
				p->counted_sig = s->sig;
				p->count_recovering = s->recovering;
				p->queued = true;
				p->retry_at_ms = 0;
				p->state = s->recovering ? "recovering" : "backfilling";
			} else if (p->stripes_missing || s->errors) {
				/* Inconsistent stripes (or a source that went bad)
				 * remain: retry, but not in a loop. */
				p->queued = true;
				p->retry_at_ms = now + ERROR_RETRY_MS;
				p->state = s->recovering ? "recovering" : "backfilling";
			} else {
				p->clean = s->sig;
				p->have_clean = true;
				p->state = full ? "clean" : "degraded";
				if (full)
					p->last_clean_ms = unix_ms();
			}
			if (p->unfound_live && !p->queued) {
				p->queued = true;
				p->retry_at_ms = now + (p->unfound_backoff_ms ? p->unfound_backoff_ms
									      : UNFOUND_RETRY_MIN_MS);
			}
			if (p->stripes_done)
				LOG_INFO("pg rebuilt", "osd=%u pg=%u stripes=%" PRIu64 " bytes=%" PRIu64
					 " unfound=%" PRIu64 " state=%s", r->osd_id, s->pg,
					 p->stripes_done, p->bytes_done, p->unfound, p->state);
		}
	}
	scan_free(s);
	r->st.pgs_active--;
	metrics_gauge_set(r->m_active, r->st.pgs_active);
	osd_recover_scan_ended(r);
}

static void on_unfound_checked(void *ud, int err, const ProtobufCMessage *msg)
{
	struct scan *s = ud;
	struct osd_recover *r = s->r;
	const Iolake__Meta__CheckShardsResponse *c = (const void *)msg;
	s->pending--;
	if (r->stopping || s->pg >= r->n_pgs) {
		scan_step(s);
		return;
	}
	if (err || !c || c->status != IOLAKE__META__STATUS__STATUS_OK ||
	    c->n_referenced != s->n_unf) {
		s->failed = true;   /* like any call of the scan: retried later */
	} else {
		uint64_t live = 0;
		for (size_t i = 0; i < c->n_referenced; i++)
			live += c->referenced[i];
		r->pgs[s->pg].unfound_live = live;
	}
	scan_step(s);
}

/* The COUNT found unfound stripes: ask meta which of their objects are
 * live (CheckShards, one call). True when the call is in flight. */
static bool ask_unfound(struct scan *s)
{
	struct osd_recover *r = s->r;
	s->unf_asked = true;
	if (!r->mc)
		return false;
	ProtobufCBinaryData ids[UNFOUND_IDS_MAX];
	for (size_t i = 0; i < s->n_unf; i++) {
		ids[i].data = s->unf_ids[i];
		ids[i].len = sizeof(s->unf_ids[i]);
	}
	Iolake__Meta__CheckShardsRequest q = IOLAKE__META__CHECK_SHARDS_REQUEST__INIT;
	q.pg = s->pg;
	q.object_ids = ids;
	q.n_object_ids = s->n_unf;
	s->pending++;
	if (meta_client_call(r->mc, META_M_CHECK_SHARDS, &q.base, on_unfound_checked, s)) {
		s->pending--;
		s->failed = true;
		return false;
	}
	return true;
}

/* Move to the next phase; true when the scan finished (s is free). */
static bool phase_done(struct scan *s)
{
	struct osd_recover *r = s->r;
	struct pgst *p = &r->pgs[s->pg];
	if (s->phase == PH_COUNT && !s->unf_asked && !scan_winding(s)) {
		if (!p->unfound)
			p->unfound_live = 0;
		else if (s->n_unf && ask_unfound(s))
			return false;   /* its answer comes back to scan_step */
	}
	if (s->phase == PH_BAD) {
		s->phase = s->skip_count ? PH_REBUILD : PH_COUNT;
		if (s->skip_count)
			p->rebuild_started_ms = loop_now_ms();
		p->bad_shards = s->n_bads;
		reset_cursors(s);
		return false;
	}
	if (s->phase == PH_COUNT && p->stripes_missing && !s->count_only) {
		s->phase = PH_REBUILD;
		p->rebuild_started_ms = loop_now_ms();
		p->state = active_state(s);
		reset_cursors(s);
		return false;
	}
	if (s->phase == PH_COUNT && s->deep && !p->stripes_missing && !s->errors) {
		/* Nothing to rebuild: the PG is as clean (or degraded) as the
		 * count says while its stripes are compared; a third merge of
		 * the listings hands each whole stripe to a deep job. */
		s->phase = PH_DEEP;
		p->state = full_sig(&s->sig) ? "clean" : "degraded";
		reset_cursors(s);
		return false;
	}
	scan_finish(s);
	return true;
}

/* An unfound stripe of the COUNT: keep its data id (common/shard_oid.h;
 * once per object) for the check with meta. */
static void note_unfound(struct scan *s, const uint8_t *oid, uint8_t oid_len)
{
	if (oid_len != SHARD_OID_LEN || s->n_unf >= UNFOUND_IDS_MAX)
		return;
	if (s->n_unf && !memcmp(s->unf_ids[s->n_unf - 1], oid, SHARD_DATA_ID_LEN))
		return;
	if (!s->unf_ids) {
		s->unf_ids = malloc(UNFOUND_IDS_MAX * sizeof(*s->unf_ids));
		if (!s->unf_ids)
			return;   /* not asked: the count stands, the live part unknown */
	}
	memcpy(s->unf_ids[s->n_unf++], oid, SHARD_DATA_ID_LEN);
}

/* One stripe of the merge. */
static void stripe(struct scan *s, const struct ent *first)
{
	struct osd_recover *r = s->r;
	struct pgst *p = &r->pgs[s->pg];
	uint8_t oid[64], oid_len = first->oid_len;
	memcpy(oid, first->oid, oid_len);
	uint32_t present = 0, crc[16] = { 0 };
	uint64_t len = 0;
	bool len_set = false, len_mismatch = false;
	for (uint32_t i = 0; i < s->sig.width; i++) {
		struct cursor *c = &s->cur[i];
		if (!c->active || c->idx >= c->n)
			continue;
		const struct ent *e = &c->ents[c->idx];
		if (osd_recover_oid_cmp(e->oid, e->oid_len, oid, oid_len))
			continue;
		c->idx++;
		if (s->n_bads && is_bad(s, oid, oid_len, i))
			continue; /* counts as missing: rewritten */
		if (len_set && e->len != len)
			len_mismatch = true;
		len = e->len;
		len_set = true;
		present |= 1u << i;
		crc[i] = e->crc;
	}
	struct osd_recover_stripe_class cl = osd_recover_classify(&s->sig, s->k, present);
	if (s->phase == PH_COUNT) {
		p->stripes++;
		if (cl.present < p->min_shards)
			p->min_shards = cl.present;
		if (cl.unfound) {
			p->unfound++;
			note_unfound(s, oid, oid_len);
		} else if (cl.rebuild) {
			p->stripes_missing++;
			p->bytes_missing += len * popcount(cl.missing);
			for (uint32_t i = 0; i < s->sig.width; i++)
				if ((cl.missing >> i & 1) &&
				    (!p->have_clean || p->clean.osds[i] != s->sig.osds[i]))
					s->recovering = true;
		}
		return;
	}
	if (s->phase == PH_DEEP) {
		/* Only whole stripes: one lacking a shard is the rebuild's. */
		uint32_t all = (1u << s->sig.width) - 1;
		if (present != all)
			return;
		if (len_mismatch) {
			char hex[2 * 64 + 1];
			for (unsigned b = 0; b < oid_len; b++)
				snprintf(hex + 2 * b, 3, "%02x", oid[b]);
			LOG_ERROR("deep scrub: shards of one stripe differ in length; nothing written",
				  "osd=%u pg=%u object=%s", r->osd_id, s->pg, hex);
			r->st.deep_inconsistent++;
			s->deep_inconsistent++;
			metrics_counter_inc(r->m_deep_inconsistent);
			return;
		}
		if (!len) {
			r->st.deep_stripes++;
			s->deep_stripes++;
			metrics_counter_inc(r->m_deep_stripes);
			return;
		}
		job_launch(s, oid, oid_len, len, present, 0, crc, true);
		return;
	}
	if (!cl.rebuild)
		return;
	if (len_mismatch) {
		s->errors++;
		r->st.errors++;
		metrics_counter_inc(r->m_errors);
		return;
	}
	job_launch(s, oid, oid_len, len, present, cl.missing, crc, false);
}

static void scan_step(struct scan *s)
{
	struct osd_recover *r = s->r;
	if (s->in_step)
		return; /* a job ended synchronously: the loop below goes on */
	s->in_step = true;
	for (;;) {
		if (scan_winding(s) || (s->pg < r->n_pgs && !r->pgs[s->pg].primary)) {
			s->superseded |= !s->failed;
			if (!s->pending && !s->jobs) {
				s->in_step = false;
				scan_finish(s);
				return;
			}
			break;
		}
		/* Every active cursor needs its current page before a merge. */
		for (uint32_t i = 0; i < s->sig.width && !s->failed; i++) {
			struct cursor *c = &s->cur[i];
			if (!c->active || c->pending || c->idx < c->n || !c->more)
				continue;
			if (s->phase == PH_BAD)
				list_bad_next(s, c);
			else
				list_next(s, c);
		}
		if (s->failed)
			continue;
		if (s->pending)
			break;
		const struct ent *min = NULL;
		if (s->phase != PH_BAD) {
			for (uint32_t i = 0; i < s->sig.width; i++) {
				struct cursor *c = &s->cur[i];
				if (!c->active || c->idx >= c->n)
					continue;
				const struct ent *e = &c->ents[c->idx];
				if (!min ||
				    osd_recover_oid_cmp(e->oid, e->oid_len, min->oid, min->oid_len) < 0)
					min = e;
			}
		}
		if (!min) {
			if (s->jobs)
				break; /* the last job's end comes back here */
			s->in_step = false;
			if (phase_done(s))
				return; /* finished: s is free */
			s->in_step = true;
			continue;
		}
		if ((s->phase == PH_REBUILD || s->phase == PH_DEEP) &&
		    s->jobs >= r->o.stripes_inflight)
			break;
		stripe(s, min);
	}
	s->in_step = false;
}

void osd_recover_scan_start(struct osd_recover *r, struct scan *s, uint32_t pg, bool count_only)
{
	struct pgst *p = &r->pgs[pg];
	/* A count of this very signature stands: go from BAD to REBUILD,
	 * keeping the counters the reports show. */
	bool skip = !count_only && p->counted && osd_recover_sig_eq(&p->counted_sig, &p->cur);
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->used = true;
	s->pg = pg;
	s->sig = p->cur;
	s->epoch = r->epoch;
	s->k = r->k;
	s->m = r->m;
	s->phase = PH_BAD;
	s->count_only = count_only;
	s->skip_count = skip;
	s->deep = p->deep_wanted && r->o.deep_scrub_ms && !skip;
	s->recovering = skip && p->count_recovering;
	s->bads = calloc(BAD_MAX, sizeof(*s->bads));
	bool oom = !s->bads;
	for (uint32_t i = 0; i < s->sig.width; i++) {
		struct cursor *c = &s->cur[i];
		c->s = s;
		c->slot = (uint8_t)i;
		c->active = s->sig.osds[i] != OSD_RECOVER_NONE && (s->sig.up_mask >> i & 1);
		if (c->active) {
			c->ents = malloc(PAGE_LIMIT * sizeof(*c->ents));
			oom |= !c->ents;
		}
	}
	p->active = true;
	p->queued = false;
	p->flagged = false;
	p->rep = s->sig;
	p->epoch = r->epoch;
	p->counted = false;
	if (skip) {
		p->state = active_state(s);
	} else {
		p->state = "scanning";
		p->stripes = p->stripes_missing = p->bytes_missing = 0;
		p->unfound = 0;
		p->min_shards = s->sig.width;
		p->scan_started_ms = unix_ms();
	}
	p->stripes_done = p->bytes_done = p->bad_shards = 0;
	p->rebuild_started_ms = 0;
	r->st.pgs_active++;
	metrics_gauge_set(r->m_active, r->st.pgs_active);
	if (oom || !r->ec || s->sig.width != r->k + r->m || s->sig.width > EC_MAX_SHARDS ||
	    s->sig.width > 16)
		s->failed = true;
	reset_cursors(s);
	scan_step(s);
}

void osd_recover_scan_drop_waiters(struct osd_recover *r)
{
	while (r->wait_head) {
		struct job *j = r->wait_head;
		r->wait_head = j->next_wait;
		j->waiting = false;
		job_end(j);
	}
	r->wait_tail = NULL;
}
