/*
 * recover_stray.c — the recovery driver's stray drop (see recover.h and
 * docs/architecture.md, osd/ "Recovery"): shards this OSD holds of a PG
 * whose slots no longer name it (it left the PG's set: an expansion, or
 * its slot came back to an OSD that returned) are deleted once meta says
 * that PG is active+clean without it — copy before drop.
 *
 * A round: PgStats from the leader (which PGs are active+clean with a
 * valid report at which map epoch); when that epoch is the map this OSD
 * holds, for each PG whose slots do not name this OSD and which is clean,
 * ListShards(pg) on this OSD itself (64 keys) and DeleteShard each, until
 * none is left. One call in flight at a time; a round runs only while no
 * scan is active. A round that completed with every stray PG clean is not
 * repeated until the map moves; one that had to skip a PG (not clean yet,
 * or epochs apart) runs again STRAY_RETRY_MS later.
 *
 * Invariant (safety): a shard is deleted only when this OSD is in none of
 * its PG's slots in its map, and meta derived that PG active+clean from a
 * report of the PG's current slots at that very map epoch, none of them
 * this OSD, counting no unfound stripe: every stripe then has its k+m
 * shards on the other OSDs. "active+clean" alone does not say so: a
 * stripe with fewer than k shards on the slots is left out of it (an
 * orphan of a failed PUT, or a live object whose other shards sit on
 * OSDs out of the set for now, like this one), and this OSD's shard may
 * be one the object needs once those OSDs are back in: dropping it lost
 * acknowledged objects (the thrash soak of 2026-12-05). Such a PG keeps
 * its strays until the orphan sweep or the OSDs' return clears it.
 *
 * Thread: the OSD's loop. Does not: touch the store directly (its own OSD
 * is reached over RPC, as in the scans), or delete anything of a PG whose
 * set names this OSD.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "meta/client.h"
#include "osd/recover_int.h"

#define STRAY_PAGE 64
#define STRAY_RETRY_MS 10000

static void stray_step(struct osd_recover *r);

static void stray_round_end(struct osd_recover *r, bool complete)
{
	r->stray_busy = false;
	free(r->stray_clean);
	r->stray_clean = NULL;
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
	} else {
		const Iolake__Osd__ListShardsResponse *l = (const void *)res->resp;
		for (size_t i = 0; i < l->n_shards && r->stray_n < STRAY_PAGE; i++) {
			const Iolake__Osd__ShardKey *k = l->shards[i]->key;
			if (!k || k->pg != r->stray_pg || k->object_id.len > sizeof(r->stray_keys[0].oid))
				continue;
			struct stray_key *sk = &r->stray_keys[r->stray_n++];
			sk->shard = k->shard;
			sk->oid_len = (uint8_t)k->object_id.len;
			memcpy(sk->oid, k->object_id.data, k->object_id.len);
		}
		r->stray_listed = true;
	}
	r->stray_i = 0;
	stray_call_done(r);
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
	if (r->stray_listed && r->stray_i < r->stray_n) {
		/* Delete the listed keys, one call at a time. */
		const struct stray_key *sk = &r->stray_keys[r->stray_i++];
		Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
		key.pg = r->stray_pg;
		key.shard = sk->shard;
		key.object_id.data = (uint8_t *)sk->oid;
		key.object_id.len = sk->oid_len;
		Iolake__Osd__DeleteShardRequest q = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
		q.key = &key;
		r->stray_calls++;
		rpc_call(ch, OSD_SVC, OSD_M_DEL, &q.base, NULL, &co, on_stray_delete, r);
		return;
	}
	if (r->stray_listed && r->stray_n == STRAY_PAGE) {
		/* A full page went: list the PG again (from its start: what
		 * was deleted is gone). */
		r->stray_listed = false;
	} else if (r->stray_listed) {
		r->stray_listed = false;
		r->stray_pg++;
	}
	/* The next PG this OSD is out of and meta called clean. */
	while (r->stray_pg < r->n_pgs &&
	       (in_set(r, r->stray_pg) || !r->stray_clean[r->stray_pg]))
		r->stray_pg++;
	if (r->stray_pg >= r->n_pgs) {
		stray_round_end(r, !r->stray_skipped);
		return;
	}
	Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
	q.pg = r->stray_pg;
	q.limit = STRAY_PAGE;
	r->stray_calls++;
	rpc_call(ch, OSD_SVC, OSD_M_LIST, &q.base, NULL, &co, on_stray_list, r);
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
	r->stray_clean = calloc(r->n_pgs ? r->n_pgs : 1, 1);
	if (!r->stray_clean) {
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
		if (!named && st->report_valid && st->state && !strcmp(st->state, "active+clean") &&
		    st->report && !st->report->unfound)
			r->stray_clean[st->pg] = 1;
		else
			r->stray_skipped = true; /* maybe strays here: look again later */
	}
	stray_step(r);
}

void osd_recover_stray_tick(struct osd_recover *r, uint64_t now)
{
	if (r->stopping || r->stray_busy || !r->mc || !r->epoch || r->st.pgs_active ||
	    (r->stray_epoch_done == r->epoch) || now < r->stray_next_ms)
		return;
	r->stray_busy = true;
	r->stray_failed = r->stray_skipped = r->stray_listed = false;
	r->stray_epoch = r->epoch;
	r->stray_pg = 0;
	r->stray_n = r->stray_i = 0;
	r->stray_deleted_round = 0;
	Iolake__Meta__PgStatsRequest q = IOLAKE__META__PG_STATS_REQUEST__INIT;
	r->stray_calls++;
	if (meta_client_call(r->mc, META_M_PG_STATS, &q.base, on_stats, r)) {
		r->stray_calls--;
		stray_round_end(r, false);
	}
}
