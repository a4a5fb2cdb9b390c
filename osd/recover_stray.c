/*
 * recover_stray.c — what the recovery driver does with its strays (see
 * recover.h and docs/architecture.md, osd/ "Recovery"): shards this OSD
 * holds of a PG whose slots no longer name it (it left the PG's set: an
 * OSD marked out, an expansion, or its slot came back to an OSD that
 * returned). They are copied back where the set lacks them when the PG
 * has unfound stripes (the push), and deleted once meta says the PG is
 * active+clean without it and counts no unfound stripe (the drop): copy
 * before drop.
 *
 * A round: PgStats from the leader; when its epoch is the map this OSD
 * holds, each PG whose slots do not name this OSD gets a mode:
 *   DROP  meta derived it active+clean from a report of its current
 *         slots at that epoch, counting no unfound stripe: ListShards(pg)
 *         on this OSD itself (64 keys), DeleteShard each, until none is
 *         left;
 *   PUSH  that report counts unfound stripes (fewer than k shards on the
 *         slots): page this OSD's shards of pg (64 keys), ask meta which
 *         objects are live (CheckShards), ask each live key's slot OSD
 *         whether it holds it (StatShards), and for each it lacks GetShard
 *         here, check the crc32c and PutShard it to that slot's OSD (at
 *         this map's epoch: a newer map there refuses it). A PG that got
 *         shards is flagged (FlagPgs), so its primary rescans at once and
 *         rebuilds the rest from them. A push that moved nothing is not
 *         repeated until the PG's report changes;
 *   KEEP  anything else (no valid report yet, or not clean): later.
 * One call in flight at a time; a round runs only while no scan is
 * active. A round that dropped every stray PG is not repeated until the
 * map moves; one that pushed or kept a PG runs again STRAY_RETRY_MS later.
 *
 * Why push: recovery reads shard i only from slot i's OSD. When several
 * OSDs leave a PG's set before it is rebuilt (three marked out at once),
 * a stripe can have fewer than k shards on the new set while the others
 * sit here: without the push its object stays unreadable until this OSD
 * is back in (Ceph's peering pulls such shards from past intervals).
 *
 * Invariant (safety): a shard is deleted only when this OSD is in none of
 * its PG's slots in its map, and meta derived that PG active+clean from a
 * report of the PG's current slots at that very map epoch, none of them
 * this OSD, counting no unfound stripe: every stripe then has its k+m
 * shards on the other OSDs. "active+clean" alone does not say so: a
 * stripe with fewer than k shards on the slots is left out of it (an
 * orphan of a failed PUT, or a live object whose other shards sit on
 * OSDs out of the set for now, like this one), and this OSD's shard may
 * be one the object needs: dropping it lost acknowledged objects (the
 * thrash soak of 2026-12-05). A push writes only shard i of a live
 * object to slot i's OSD of the current map, only where that OSD answered
 * NOT_FOUND, with the bytes' crc32c checked against the record here.
 *
 * Thread: the OSD's loop. Does not: touch the store directly (its own OSD
 * is reached over RPC, as in the scans), or delete anything of a PG whose
 * set names this OSD.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc.h"
#include "common/log.h"
#include "common/shard_oid.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "meta/client.h"
#include "osd/recover_int.h"

#define STRAY_PAGE 64
#define STRAY_RETRY_MS 10000

enum { STRAY_KEEP, STRAY_DROP, STRAY_PUSH };

enum {
	PH_NEXT,    /* pick the next PG with something to do */
	PH_LIST,    /* list a page of this OSD's shards of stray_pg */
	PH_DROP,    /* delete the page's keys */
	PH_CHECK,   /* CheckShards of the page's ids */
	PH_STAT,    /* StatShards on each live key's slot OSD */
	PH_PUSH,    /* GetShard here, PutShard there, for each missing key */
};

static void stray_step(struct osd_recover *r);

static void stray_round_end(struct osd_recover *r, bool complete)
{
	r->stray_busy = false;
	free(r->stray_mode);
	r->stray_mode = NULL;
	if (complete)
		r->stray_epoch_done = r->stray_epoch;
	else
		r->stray_next_ms = loop_now_ms() + STRAY_RETRY_MS;
	if (r->stray_deleted_round)
		LOG_INFO("stray shards dropped", "osd=%u shards=%" PRIu64 " epoch=%" PRIu64,
			 r->osd_id, r->stray_deleted_round, r->stray_epoch);
}

/* A call of the round ended: go on, or, when stopping, maybe finish. */
static void stray_call_done(struct osd_recover *r)
{
	r->stray_calls--;
	if (r->stopping) {
		osd_recover_stray_stopped(r);
		return;
	}
	stray_step(r);
}

static void set_key(Iolake__Osd__ShardKey *key, uint32_t pg, const struct stray_key *sk)
{
	key->pg = pg;
	key->shard = sk->shard;
	key->object_id.data = (uint8_t *)sk->oid;
	key->object_id.len = sk->oid_len;
}

/* Is this OSD named by any slot of pg in its map? */
static bool in_set(const struct osd_recover *r, uint32_t pg)
{
	const struct osd_recover_sig *s = &r->pgs[pg].cur;
	for (uint32_t i = 0; i < s->width; i++)
		if (s->osds[i] == r->osd_id)
			return true;
	return false;
}

/* The up OSD of the slot a stray key belongs to, or OSD_RECOVER_NONE. */
static uint32_t slot_osd(const struct osd_recover *r, const struct stray_key *sk)
{
	const struct osd_recover_sig *s = &r->pgs[r->stray_pg].cur;
	if (sk->shard >= s->width || !(s->up_mask >> sk->shard & 1))
		return OSD_RECOVER_NONE;
	return s->osds[sk->shard];
}

/* The stray PG is done: flag it when it got shards, then the next. */
static void pg_done(struct osd_recover *r)
{
	if (r->stray_pushed_pg) {
		LOG_INFO("stray shards pushed", "osd=%u pg=%u shards=%" PRIu64 " epoch=%" PRIu64,
			 r->osd_id, r->stray_pg, r->stray_pushed_pg, r->stray_epoch);
		osd_recover_flag_pg(r, r->stray_pg);
	} else if (r->stray_mode[r->stray_pg] == STRAY_PUSH && r->stray_push_seen &&
		   !r->stray_failed) {
		/* Nothing to move: not again for this report (set in on_stats). */
		r->stray_push_seen[r->stray_pg] = r->stray_push_seen[r->stray_pg] | 1;
	}
	r->stray_pg++;
	r->stray_phase = PH_NEXT;
}

/* ------------------------------------------------------------ callbacks */

static void on_stray_delete(void *ud, const struct rpc_result *res)
{
	struct osd_recover *r = ud;
	if (res->status != RPC_OK && res->status != RPC_NOT_FOUND)
		r->stray_failed = true;
	else if (res->status == RPC_OK)
		r->stray_deleted_round++;
	stray_call_done(r);
}

static void on_stray_list(void *ud, const struct rpc_result *res)
{
	struct osd_recover *r = ud;
	r->stray_n = 0;
	if (res->status != RPC_OK || !res->resp) {
		r->stray_failed = true;
		stray_call_done(r);
		return;
	}
	const Iolake__Osd__ListShardsResponse *l = (const void *)res->resp;
	for (size_t i = 0; i < l->n_shards && r->stray_n < STRAY_PAGE; i++) {
		const Iolake__Osd__ShardInfo *si = l->shards[i];
		const Iolake__Osd__ShardKey *k = si->key;
		if (!k || k->pg != r->stray_pg || k->object_id.len > sizeof(r->stray_keys[0].oid))
			continue;
		struct stray_key *sk = &r->stray_keys[r->stray_n++];
		memset(sk, 0, sizeof(*sk));
		sk->shard = k->shard;
		sk->oid_len = (uint8_t)k->object_id.len;
		memcpy(sk->oid, k->object_id.data, k->object_id.len);
		sk->crc = si->crc32c;
		sk->len = si->length;
		r->stray_after = *sk;
		r->stray_have_after = true;
	}
	r->stray_more = l->more;
	r->stray_i = 0;
	r->stray_phase = r->stray_mode[r->stray_pg] == STRAY_DROP ? PH_DROP : PH_CHECK;
	stray_call_done(r);
}

/* The page's distinct gw_data ids, in page order (keys of another length
 * are not gw_data's: never pushed); ids[] may be NULL to count them. */
static size_t page_ids(const struct osd_recover *r, ProtobufCBinaryData *ids)
{
	size_t n = 0;
	const uint8_t *prev = NULL;
	for (unsigned i = 0; i < r->stray_n; i++) {
		const struct stray_key *sk = &r->stray_keys[i];
		if (sk->oid_len != SHARD_OID_LEN || (prev && !memcmp(prev, sk->oid, SHARD_DATA_ID_LEN)))
			continue;
		prev = sk->oid;
		if (ids) {
			ids[n].data = (uint8_t *)sk->oid;
			ids[n].len = SHARD_DATA_ID_LEN;
		}
		n++;
	}
	return n;
}

static void on_stray_checked(void *ud, int err, const ProtobufCMessage *msg)
{
	struct osd_recover *r = ud;
	const Iolake__Meta__CheckShardsResponse *c = (const void *)msg;
	if (err || !c || c->status != IOLAKE__META__STATUS__STATUS_OK ||
	    c->n_referenced != page_ids(r, NULL)) {
		r->stray_failed = true;
		stray_call_done(r);
		return;
	}
	size_t id = 0;
	const uint8_t *prev = NULL;
	for (unsigned i = 0; i < r->stray_n; i++) {
		struct stray_key *sk = &r->stray_keys[i];
		if (sk->oid_len != SHARD_OID_LEN)
			continue;
		if (prev && memcmp(prev, sk->oid, SHARD_DATA_ID_LEN))
			id++;
		prev = sk->oid;
		sk->live = c->referenced[id];
	}
	stray_call_done(r);
}

static void on_stray_stat(void *ud, const struct rpc_result *res)
{
	struct osd_recover *r = ud;
	if (res->status != RPC_OK || !res->resp) {
		r->stray_failed = true;
		stray_call_done(r);
		return;
	}
	const Iolake__Osd__StatShardsResponse *st = (const void *)res->resp;
	size_t n = 0;
	for (unsigned i = 0; i < r->stray_n; i++) {
		struct stray_key *sk = &r->stray_keys[i];
		if (!sk->live || sk->statted || slot_osd(r, sk) != r->stray_target)
			continue;
		sk->statted = true;
		if (n < st->n_results && st->results[n])
			sk->missing = st->results[n]->status == RPC_NOT_FOUND;
		n++;
	}
	if (n != st->n_results)
		r->stray_failed = true;   /* not the answer to what was asked */
	stray_call_done(r);
}

static void on_stray_put(void *ud, const struct rpc_result *res)
{
	struct osd_recover *r = ud;
	if (res->status == RPC_OK) {
		r->stray_pushed_pg++;
		r->stray_pushed_round++;
	} else {
		r->stray_failed = true;   /* "misplaced" (a newer map there) among them */
	}
	stray_call_done(r);
}

static void on_stray_get(void *ud, const struct rpc_result *res)
{
	struct osd_recover *r = ud;
	const struct stray_key *sk = &r->stray_keys[r->stray_i - 1];
	if (res->status == RPC_NOT_FOUND) {
		stray_call_done(r);   /* deleted meanwhile (the sweep, a GC) */
		return;
	}
	if (res->status != RPC_OK) {
		r->stray_failed = true;
		stray_call_done(r);
		return;
	}
	const Iolake__Osd__GetShardResponse *g = (const void *)res->resp;
	bool ok = g && g->info && g->offset == 0 &&
		  g->length == sk->len && res->payload.len == sk->len &&
		  g->info->crc32c == sk->crc && g->range_crc32c == sk->crc;
	if (ok)
		ok = crc32c(0, buf_slice_data(&res->payload), res->payload.len) == sk->crc;
	if (!ok) {
		/* A bad copy here: not pushed (its own scrub flags it). */
		r->st.errors++;
		metrics_counter_inc(r->m_errors);
		LOG_WARN("stray shard failed its checks: not pushed", "osd=%u pg=%u shard=%u",
			 r->osd_id, r->stray_pg, sk->shard);
		stray_call_done(r);
		return;
	}
	struct rpc_channel *ch = NULL;
	if (!r->stopping && r->epoch == r->stray_epoch)
		ch = meta_mapwatch_channel(r->mw, slot_osd(r, sk));
	if (!ch) {
		r->stray_failed = true;
		stray_call_done(r);
		return;
	}
	Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
	set_key(&key, r->stray_pg, sk);
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	q.key = &key;
	q.length = sk->len;
	q.crc32c = sk->crc;
	q.background = true;
	q.map_epoch = r->stray_epoch;
	struct rpc_call_opts co = { .timeout_ms = r->o.rpc_timeout_ms };
	/* The call in flight goes on: the get's count passes to the put. */
	rpc_call(ch, OSD_SVC, OSD_M_PUT, &q.base, sk->len ? &res->payload : NULL, &co,
		 on_stray_put, r);
}

/* ------------------------------------------------------------ the round */

/* PH_CHECK: CheckShards of the page's ids. 1: asked; 0: nothing to ask;
 * -1: the call could not start. */
static int call_check(struct osd_recover *r)
{
	ProtobufCBinaryData ids[STRAY_PAGE];
	size_t n = page_ids(r, ids);
	if (!n)
		return 0;
	Iolake__Meta__CheckShardsRequest q = IOLAKE__META__CHECK_SHARDS_REQUEST__INIT;
	q.pg = r->stray_pg;
	q.object_ids = ids;
	q.n_object_ids = n;
	r->stray_calls++;
	if (meta_client_call(r->mc, META_M_CHECK_SHARDS, &q.base, on_stray_checked, r)) {
		r->stray_calls--;
		return -1;
	}
	return 1;
}

/* PH_STAT: StatShards of the live keys not asked yet whose slot OSD is the
 * first such key's. 1: asked; 0: every live key asked; -1: no channel. */
static int call_stat(struct osd_recover *r, const struct rpc_call_opts *co)
{
	Iolake__Osd__ShardKey keys[STRAY_PAGE], *kp[STRAY_PAGE];
	size_t n = 0;
	r->stray_target = OSD_RECOVER_NONE;
	for (unsigned i = 0; i < r->stray_n; i++) {
		struct stray_key *sk = &r->stray_keys[i];
		if (!sk->live || sk->statted)
			continue;
		uint32_t osd = slot_osd(r, sk);
		if (osd == OSD_RECOVER_NONE || osd == r->osd_id) {
			sk->statted = true;     /* its slot is down: another round */
			r->stray_skipped = true;
			continue;
		}
		if (r->stray_target == OSD_RECOVER_NONE)
			r->stray_target = osd;
		if (osd != r->stray_target)
			continue;
		Iolake__Osd__ShardKey k = IOLAKE__OSD__SHARD_KEY__INIT;
		keys[n] = k;
		set_key(&keys[n], r->stray_pg, sk);
		kp[n] = &keys[n];
		n++;
	}
	if (!n)
		return 0;
	struct rpc_channel *ch = meta_mapwatch_channel(r->mw, r->stray_target);
	if (!ch)
		return -1;
	Iolake__Osd__StatShardsRequest q = IOLAKE__OSD__STAT_SHARDS_REQUEST__INIT;
	q.keys = kp;
	q.n_keys = n;
	r->stray_calls++;
	rpc_call(ch, OSD_SVC, OSD_M_STATS, &q.base, NULL, co, on_stray_stat, r);
	return 1;
}

static void stray_step(struct osd_recover *r)
{
	if (r->stopping || !r->stray_busy)
		return;
	if (r->stray_failed || r->epoch != r->stray_epoch) {
		/* A call failed or the map moved under the round: later. */
		stray_round_end(r, false);
		return;
	}
	struct rpc_channel *ch = r->mw ? meta_mapwatch_channel(r->mw, r->osd_id) : NULL;
	if (!ch) {
		stray_round_end(r, false);
		return;
	}
	struct rpc_call_opts co = { .timeout_ms = r->o.rpc_timeout_ms };
	int rc;
	for (;;) {
		switch (r->stray_phase) {
		case PH_NEXT:
			/* The next PG this OSD is out of with something to do. */
			while (r->stray_pg < r->n_pgs &&
			       (in_set(r, r->stray_pg) || r->stray_mode[r->stray_pg] == STRAY_KEEP))
				r->stray_pg++;
			if (r->stray_pg >= r->n_pgs) {
				stray_round_end(r, !r->stray_skipped);
				return;
			}
			r->stray_have_after = false;
			r->stray_pushed_pg = 0;
			r->stray_phase = PH_LIST;
			break;
		case PH_LIST: {
			Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
			Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
			q.pg = r->stray_pg;
			q.limit = STRAY_PAGE;
			if (r->stray_have_after && r->stray_mode[r->stray_pg] == STRAY_PUSH) {
				set_key(&after, r->stray_pg, &r->stray_after);
				q.after = &after;
			}
			r->stray_calls++;
			rpc_call(ch, OSD_SVC, OSD_M_LIST, &q.base, NULL, &co, on_stray_list, r);
			return;
		}
		case PH_DROP:
			if (r->stray_i < r->stray_n) {
				/* Delete the listed keys, one call at a time. */
				const struct stray_key *sk = &r->stray_keys[r->stray_i++];
				Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
				set_key(&key, r->stray_pg, sk);
				Iolake__Osd__DeleteShardRequest q = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
				q.key = &key;
				r->stray_calls++;
				rpc_call(ch, OSD_SVC, OSD_M_DEL, &q.base, NULL, &co, on_stray_delete, r);
				return;
			}
			/* A full page went: list the PG again from its start
			 * (what was deleted is gone); else it is done. */
			if (r->stray_n == STRAY_PAGE)
				r->stray_phase = PH_LIST;
			else
				pg_done(r);
			break;
		case PH_CHECK:
			r->stray_phase = PH_STAT;
			rc = call_check(r);
			if (rc < 0)
				stray_round_end(r, false);
			if (rc)
				return;
			break;
		case PH_STAT:
			rc = call_stat(r, &co);
			if (rc < 0)
				stray_round_end(r, false);
			if (rc)
				return;
			r->stray_i = 0;
			r->stray_phase = PH_PUSH;
			break;
		case PH_PUSH:
			while (r->stray_i < r->stray_n && !r->stray_keys[r->stray_i].missing)
				r->stray_i++;
			if (r->stray_i < r->stray_n) {
				const struct stray_key *sk = &r->stray_keys[r->stray_i++];
				Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
				set_key(&key, r->stray_pg, sk);
				Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
				q.key = &key;
				q.background = true;
				r->stray_calls++;
				rpc_call(ch, OSD_SVC, OSD_M_GET, &q.base, NULL, &co, on_stray_get, r);
				return;
			}
			if (r->stray_more)
				r->stray_phase = PH_LIST;
			else
				pg_done(r);
			break;
		}
	}
}

static void on_stats(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_recover *r = ud;
	r->stray_calls--;
	if (r->stopping) {
		osd_recover_stray_stopped(r);
		return;
	}
	const Iolake__Meta__PgStatsResponse *ps = (const void *)resp;
	if (err || !ps || ps->status != IOLAKE__META__STATUS__STATUS_OK || ps->epoch != r->epoch ||
	    ps->n_pgs != r->n_pgs) {
		stray_round_end(r, false);
		return;
	}
	r->stray_mode = calloc(r->n_pgs ? r->n_pgs : 1, 1);
	if (!r->stray_push_seen)
		r->stray_push_seen = calloc(r->n_pgs ? r->n_pgs : 1, sizeof(uint64_t));
	if (!r->stray_mode || !r->stray_push_seen) {
		stray_round_end(r, false);
		return;
	}
	for (size_t i = 0; i < ps->n_pgs; i++) {
		const Iolake__Meta__PgStat *st = ps->pgs[i];
		if (!st || st->pg >= r->n_pgs || in_set(r, st->pg))
			continue;
		bool named = false;
		for (size_t j = 0; j < st->n_osds; j++)
			named |= st->osds[j] == r->osd_id;
		bool valid = !named && st->report_valid && st->report;
		if (valid && st->state && !strcmp(st->state, "active+clean") && !st->report->unfound) {
			r->stray_mode[st->pg] = STRAY_DROP;
			continue;
		}
		r->stray_skipped = true; /* maybe strays here: look again later */
		if (valid && st->report->unfound) {
			/* Pushed once per report: (epoch, unfound) with bit 0
			 * set by a push that moved nothing. */
			uint64_t seen = (r->epoch << 32 ^ st->report->unfound) << 1;
			if ((r->stray_push_seen[st->pg] & ~1ull) != seen)
				r->stray_push_seen[st->pg] = seen;
			if (!(r->stray_push_seen[st->pg] & 1))
				r->stray_mode[st->pg] = STRAY_PUSH;
		}
	}
	r->stray_phase = PH_NEXT;
	stray_step(r);
}

void osd_recover_stray_tick(struct osd_recover *r, uint64_t now)
{
	if (r->stopping || r->stray_busy || !r->mc || !r->epoch || r->st.pgs_active ||
	    (r->stray_epoch_done == r->epoch) || now < r->stray_next_ms)
		return;
	r->stray_busy = true;
	r->stray_failed = r->stray_skipped = false;
	r->stray_epoch = r->epoch;
	r->stray_pg = 0;
	r->stray_n = r->stray_i = 0;
	r->stray_deleted_round = r->stray_pushed_round = 0;
	Iolake__Meta__PgStatsRequest q = IOLAKE__META__PG_STATS_REQUEST__INIT;
	r->stray_calls++;
	if (meta_client_call(r->mc, META_M_PG_STATS, &q.base, on_stats, r)) {
		r->stray_calls--;
		stray_round_end(r, false);
	}
}
