/*
 * node_move.c — the root leader finishes moves of records between range
 * groups (meta/range_move.h): once a second it looks for a root row in a
 * move (MoveRange leaves one; a driver that stopped — iolake-admin killed,
 * a leader change, a crash — leaves it half done) and, when it finds one,
 * drives every move to its end with the mover over its own meta client
 * (the members' RPC addresses from the root's configuration). Automatic
 * moves (--range-split-objects, --range-split-bytes, --range-merge-objects):
 * every range_poll_ms it asks each live group for its open ranges'
 * counters, one group after another, and splits the first range past a
 * threshold at its median key (ReadRange split_key: the source group's
 * scan to half its objects) or, when none is, merges the first adjacent
 * pair of a bucket under the merge threshold. Splits by load
 * (--range-split-load N, --range-split-load-secs S; after TiKV's load-based
 * split): the same answers carry each range leader's request count
 * (meta/range_heat.h, RangeDesc 24-27); a range whose rate between two
 * looks stayed above N for S seconds is split at its leader's load split
 * key. Size splits go first (they bound a move's cost, which a hot small
 * range does not grow); a merge needs both ranges, and their sum, under
 * N/2 for S seconds (no split/merge flapping). One move at a time. Also the
 * /metrics of moves: iolake_meta_range_moves_total, ..._records_moved_total,
 * ..._records_dropped_total, ..._sealed_ms (the last move's) and
 * ..._sealed_ms_total.
 *
 * Owns the mover's client; closed when leadership goes and at close.
 * Not here: the mover (range_move.c), the ops (state_range.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/metrics.h"
#include "meta/node_internal.h"
#include "meta/range_move.h"

#define MOVE_POLL_MS 1000
#define TRACKS_MAX 10000               /* META_RANGES_MAX: one per open range */

struct count {
	uint64_t id, objects, bytes;
	bool load;                     /* the group's leader gave load figures */
	uint64_t requests;             /* its request count, when load */
	char *split_key;               /* its load split key; NULL: none */
};

/* A range's load as the root leader saw it across looks (kept between
 * rounds; leader memory). */
struct track {
	uint64_t id;
	uint64_t requests, at_ms;      /* the last figure and when it came */
	uint64_t rate;                 /* requests/s between the last two looks */
	uint64_t above_ms;             /* start of the run of looks over the
	                                * threshold (0: not over it) */
	unsigned above_looks;          /* looks in that run: two at least split
	                                * (one rate can span a leader change) */
	uint64_t low_ms;               /* start of the run under half of it (0: not) */
};

struct node_mover {
	struct meta_node *n;
	struct meta_client *c;
	bool running;                  /* a driver, or a look at the counters */
	uint64_t last_ms, last_auto_ms;
	/* automatic moves: the groups' counters, asked one group at a time */
	uint64_t *groups;
	size_t n_groups, gi;
	struct count *cnt;
	size_t n_cnt, cap_cnt;
	char split_bucket[64];
	uint64_t split_id;
	struct track *tracks;
	size_t n_tracks, cap_tracks;
	struct metrics_counter *m_auto_splits, *m_auto_merges, *m_load_splits;
	struct metrics_counter *m_moves, *m_records, *m_dropped, *m_sealed_total;
	struct metrics_gauge *m_sealed;
};

static bool move_pending(struct meta_node *n)
{
	Iolake__Meta__RangeDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_ranges(n->root->state, NULL, &v, &cnt))
		return false;
	bool any = false;
	for (size_t i = 0; i < cnt; i++) {
		any = any || v[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE;
		meta_state_free_msg(v[i]);
	}
	free(v);
	return any;
}

static int mover_client(struct node_mover *mv)
{
	struct meta_node *n = mv->n;
	char addrs[META_CLIENT_MAX_MEMBERS][META_NODE_ADDR_MAX];
	const char *ptrs[META_CLIENT_MAX_MEMBERS];
	size_t m = 0;
	const struct raft_configuration *c = &n->root->raft.configuration;
	for (unsigned k = 0; k < c->n && m < META_CLIENT_MAX_MEMBERS; k++) {
		if (c->servers[k].role != RAFT_VOTER ||
		    meta_node_rpc_addr(c->servers[k].address, addrs[m]))
			continue;
		ptrs[m] = addrs[m];
		m++;
	}
	if (!m)
		return -ENOENT;
	struct meta_client_opts o = { .members = ptrs, .n_members = m };
	return meta_client_new(n->loop, &o, &mv->c);
}

static void on_driven(void *ud, int err, const struct meta_move_stats *st)
{
	struct node_mover *mv = ud;
	mv->running = false;
	metrics_counter_add(mv->m_moves, st->moves);
	metrics_counter_add(mv->m_records, st->records);
	metrics_counter_add(mv->m_dropped, st->dropped);
	metrics_counter_add(mv->m_sealed_total, st->sealed_ms_total);
	if (st->moves)
		metrics_gauge_set(mv->m_sealed, (int64_t)st->sealed_ms);
	if (err && err != IOL_ESHUTDOWN)
		LOG_WARN("range move: will retry", "err=%s", iol_strerror(err));
	else if (st->moves)
		LOG_INFO("range moves finished", "moves=%llu records=%llu sealed_ms=%llu",
			 (unsigned long long)st->moves, (unsigned long long)st->records,
			 (unsigned long long)st->sealed_ms);
}

static struct node_mover *mover(struct meta_node *n)
{
	if (n->mover)
		return n->mover;
	struct node_mover *mv = calloc(1, sizeof(*mv));
	if (!mv)
		return NULL;
	mv->n = n;
	struct metrics_registry *r = n->metrics;
	mv->m_moves = metrics_counter_new(r, "iolake_meta_range_moves_total",
					  "Splits and merges of key ranges this member drove to "
					  "their end as root leader.", NULL);
	mv->m_records = metrics_counter_new(r, "iolake_meta_range_records_moved_total",
					    "Records copied between range groups by moves.", NULL);
	mv->m_dropped = metrics_counter_new(r, "iolake_meta_range_records_dropped_total",
					    "Moved records dropped from their source group.", NULL);
	mv->m_sealed_total = metrics_counter_new(r, "iolake_meta_range_sealed_ms_total",
						 "Milliseconds ranges spent sealed for moves.", NULL);
	mv->m_sealed = metrics_gauge_new(r, "iolake_meta_range_sealed_ms",
					 "The last move's sealed time (ms).", NULL);
	mv->m_auto_splits = metrics_counter_new(r, "iolake_meta_range_auto_splits_total",
						"Automatic splits started (--range-split-*).", NULL);
	mv->m_auto_merges = metrics_counter_new(r, "iolake_meta_range_auto_merges_total",
						"Automatic merges started (--range-merge-objects).",
						NULL);
	mv->m_load_splits = metrics_counter_new(r, "iolake_meta_range_load_splits_total",
						"Splits by load started (--range-split-load).", NULL);
	n->mover = mv;
	return mv;
}

/* ---- automatic splits and merges */

static void auto_end(struct node_mover *mv)
{
	free(mv->groups);
	for (size_t i = 0; i < mv->n_cnt; i++)
		free(mv->cnt[i].split_key);
	free(mv->cnt);
	mv->groups = NULL;
	mv->cnt = NULL;
	mv->n_groups = mv->gi = mv->n_cnt = mv->cap_cnt = 0;
	mv->running = false;
}

/* mv->cnt and mv->tracks are sorted by id once a round's counts are in
 * (auto_decide), so every per-range lookup of a round is a binary search:
 * a look stays O(ranges log ranges) on the root leader's loop. */
static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static const struct count *count_of(const struct node_mover *mv, uint64_t id)
{
	return mv->n_cnt ? bsearch(&id, mv->cnt, mv->n_cnt, sizeof(*mv->cnt), cmp_id) : NULL;
}

static void on_split_key(void *ud, int err, const ProtobufCMessage *resp)
{
	struct node_mover *mv = ud;
	const Iolake__Meta__ReadRangeResponse *r = (const void *)resp;
	if (err || r->status || !r->split_key[0]) {
		auto_end(mv);
		return;
	}
	LOG_INFO("range split by size", "bucket=%s range=%llu key_len=%zu", mv->split_bucket,
		 (unsigned long long)mv->split_id, strlen(r->split_key));
	char bucket[64];
	snprintf(bucket, sizeof(bucket), "%s", mv->split_bucket);
	auto_end(mv);
	if (meta_move_start(mv->c, mv->n->loop, bucket, mv->split_id, r->split_key, false, 0,
			    NULL, on_driven, mv) == 0) {
		mv->running = true;
		metrics_counter_inc(mv->m_auto_splits);
	}
}

/* ---- load */

static unsigned load_secs(const struct meta_node_opts *o)
{
	return o->range_split_load_secs ? o->range_split_load_secs
					: META_RANGE_SPLIT_LOAD_SECS_DEFAULT;
}

/* In the first n tracks (sorted by id). */
static struct track *track_in(struct node_mover *mv, size_t n, uint64_t id)
{
	return n ? bsearch(&id, mv->tracks, n, sizeof(*mv->tracks), cmp_id) : NULL;
}

static struct track *track_of(struct node_mover *mv, uint64_t id)
{
	return track_in(mv, mv->n_tracks, id);
}

/* Range id's leader counted `requests` by now_ms: its rate since the last
 * look, and the runs over the threshold and under half of it. A smaller
 * count than before is another leader's: the runs start again. */
static void track_note(struct node_mover *mv, size_t n_sorted, uint64_t id, uint64_t requests,
		       uint64_t now_ms)
{
	uint64_t limit = mv->n->o.range_split_load;
	struct track *t = track_in(mv, n_sorted, id);
	if (!t) {
		if (mv->n_tracks == mv->cap_tracks) {
			size_t cap = mv->cap_tracks ? 2 * mv->cap_tracks : 64;
			struct track *nt = cap <= TRACKS_MAX ? realloc(mv->tracks, cap * sizeof(*nt))
							     : NULL;
			if (!nt)
				return;   /* no figure: neither split nor kept from a merge */
			mv->tracks = nt;
			mv->cap_tracks = cap;
		}
		mv->tracks[mv->n_tracks++] = (struct track){ .id = id, .requests = requests,
							     .at_ms = now_ms };
		return;
	}
	if (requests < t->requests || now_ms <= t->at_ms) {
		*t = (struct track){ .id = id, .requests = requests, .at_ms = now_ms };
		return;
	}
	t->rate = (requests - t->requests) * 1000 / (now_ms - t->at_ms);
	if (limit && t->rate > limit) {
		if (!t->above_ms)
			t->above_ms = t->at_ms;
		t->above_looks++;
	} else {
		t->above_ms = 0;
		t->above_looks = 0;
	}
	if (!limit || 2 * t->rate < limit) {
		if (!t->low_ms)
			t->low_ms = t->at_ms;
	} else {
		t->low_ms = 0;
	}
	t->requests = requests;
	t->at_ms = now_ms;
}

/* A round's counts are in: sort them; forget the tracks of ranges no
 * group reported open this round; note each reported load (new tracks
 * go after the sorted ones, each range id is reported once); sort the
 * tracks again. */
static void tracks_update(struct node_mover *mv, uint64_t now_ms)
{
	if (mv->n_cnt)
		qsort(mv->cnt, mv->n_cnt, sizeof(*mv->cnt), cmp_id);
	for (size_t i = 0; i < mv->n_tracks;) {
		if (count_of(mv, mv->tracks[i].id))
			i++;
		else
			mv->tracks[i] = mv->tracks[--mv->n_tracks];
	}
	if (mv->n_tracks)
		qsort(mv->tracks, mv->n_tracks, sizeof(*mv->tracks), cmp_id);
	size_t n_sorted = mv->n_tracks;
	if (mv->n->o.range_split_load)
		for (size_t i = 0; i < mv->n_cnt; i++)
			if (mv->cnt[i].load)
				track_note(mv, n_sorted, mv->cnt[i].id, mv->cnt[i].requests, now_ms);
	if (mv->n_tracks > n_sorted)
		qsort(mv->tracks, mv->n_tracks, sizeof(*mv->tracks), cmp_id);
}

/* A range to split by load: over the threshold for load_secs, with a
 * split key its leader found strictly inside it; the hottest one. */
static const Iolake__Meta__RangeDesc *load_split_pick(struct node_mover *mv,
						      Iolake__Meta__RangeDesc **v, size_t cnt,
						      uint64_t now_ms, const char **key)
{
	const struct meta_node_opts *o = &mv->n->o;
	const Iolake__Meta__RangeDesc *best = NULL;
	uint64_t best_rate = 0;
	if (!o->range_split_load)
		return NULL;
	for (size_t i = 0; i < cnt; i++) {
		const struct count *c = count_of(mv, v[i]->id);
		const struct track *t = track_of(mv, v[i]->id);
		if (!c || !t || !c->split_key || !t->above_ms || t->above_looks < 2 ||
		    now_ms - t->above_ms < (uint64_t)load_secs(o) * 1000)
			continue;
		if (strcmp(c->split_key, v[i]->start) <= 0 ||
		    (v[i]->end[0] && strcmp(c->split_key, v[i]->end) >= 0))
			continue;
		if (!best || t->rate > best_rate) {
			best = v[i];
			best_rate = t->rate;
			*key = c->split_key;
		}
	}
	return best;
}

/* Whether range c is cold enough to be merged: under half the load
 * threshold for load_secs (a range without figures, from an older member,
 * is: merges behave as before splits by load). */
static bool merge_cold(struct node_mover *mv, const struct count *c, uint64_t now_ms)
{
	const struct meta_node_opts *o = &mv->n->o;
	if (!o->range_split_load || !c->load)
		return true;
	const struct track *t = track_of(mv, c->id);
	return t && t->low_ms && now_ms - t->low_ms >= (uint64_t)load_secs(o) * 1000;
}

/* Two neighbours may merge: each cold, and their sum under half the
 * threshold too (the two halves of a split by load carry more than that
 * between them, so they are not merged back while the load lasts). */
static bool merge_pair_cold(struct node_mover *mv, const struct count *a, const struct count *b,
			    uint64_t now_ms)
{
	if (!merge_cold(mv, a, now_ms) || !merge_cold(mv, b, now_ms))
		return false;
	const struct track *ta = track_of(mv, a->id), *tb = track_of(mv, b->id);
	return !ta || !tb || 2 * (ta->rate + tb->rate) < mv->n->o.range_split_load;
}

/* Every open range's counters are in: split the first range past a size
 * threshold, else the hottest range past the load one, else merge the
 * first adjacent pair under the merge one. */
static void auto_decide(struct node_mover *mv)
{
	uint64_t now = loop_now_ms();
	const struct meta_node_opts *o = &mv->n->o;
	Iolake__Meta__RangeDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_ranges(mv->n->root->state, NULL, &v, &cnt)) {
		auto_end(mv);
		return;
	}
	tracks_update(mv, now);
	const Iolake__Meta__RangeDesc *split = NULL, *ml = NULL, *mr = NULL, *hot = NULL;
	const char *hot_key = NULL;
	for (size_t i = 0; i < cnt && !split; i++) {
		const struct count *c = count_of(mv, v[i]->id);
		if (c && ((o->range_split_objects && c->objects >= o->range_split_objects) ||
			  (o->range_split_bytes && c->bytes >= o->range_split_bytes)))
			split = v[i];
	}
	if (!split)
		hot = load_split_pick(mv, v, cnt, now, &hot_key);
	for (size_t i = 0; !split && !hot && !ml && o->range_merge_objects && i + 1 < cnt; i++) {
		const struct count *a = count_of(mv, v[i]->id), *b = count_of(mv, v[i + 1]->id);
		if (a && b && !strcmp(v[i]->bucket, v[i + 1]->bucket) &&
		    a->objects + b->objects < o->range_merge_objects &&
		    merge_pair_cold(mv, a, b, now)) {
			ml = v[i];
			mr = v[i + 1];
		}
	}
	int rc = -1;
	if (split) {
		snprintf(mv->split_bucket, sizeof(mv->split_bucket), "%s", split->bucket);
		mv->split_id = split->id;
		Iolake__Meta__ReadRangeRequest q = IOLAKE__META__READ_RANGE_REQUEST__INIT;
		q.range_id = split->id;
		q.bucket = split->bucket;
		q.start = split->start;
		q.end = split->end;
		q.split_key = true;
		q.group = split->group;
		rc = meta_client_call_direct(mv->c, META_M_READ_RANGE, &q.base, on_split_key, mv);
		if (rc)
			auto_end(mv);
	} else if (hot) {
		const struct track *t = track_of(mv, hot->id);
		LOG_INFO("range split by load", "bucket=%s range=%llu req_per_s=%llu key_len=%zu",
			 hot->bucket, (unsigned long long)hot->id,
			 (unsigned long long)(t ? t->rate : 0), strlen(hot_key));
		/* meta_move_start copies what it keeps; hot_key lives in mv->cnt */
		int mrc = meta_move_start(mv->c, mv->n->loop, hot->bucket, hot->id, hot_key, false,
					  0, NULL, on_driven, mv);
		auto_end(mv);
		if (mrc == 0) {
			mv->running = true;
			metrics_counter_inc(mv->m_load_splits);
		}
	} else if (ml) {
		auto_end(mv);
		LOG_INFO("range merge by size", "bucket=%s range=%llu", ml->bucket,
			 (unsigned long long)ml->id);
		if (meta_move_start(mv->c, mv->n->loop, ml->bucket, ml->id, mr->start, true, 0, NULL,
				    on_driven, mv) == 0) {
			mv->running = true;
			metrics_counter_inc(mv->m_auto_merges);
		}
	} else {
		auto_end(mv);
	}
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static void auto_next(struct node_mover *mv);

static void on_counts(void *ud, int err, const ProtobufCMessage *resp)
{
	struct node_mover *mv = ud;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	if (err) {
		auto_end(mv);
		return;
	}
	for (size_t i = 0; i < g->n_ranges; i++) {
		if (g->ranges[i]->sealed)
			continue;
		if (mv->n_cnt == mv->cap_cnt) {
			size_t cap = mv->cap_cnt ? 2 * mv->cap_cnt : 64;
			struct count *nc = realloc(mv->cnt, cap * sizeof(*nc));
			if (!nc) {
				auto_end(mv);
				return;
			}
			mv->cnt = nc;
			mv->cap_cnt = cap;
		}
		const Iolake__Meta__RangeDesc *d = g->ranges[i];
		struct count *c = &mv->cnt[mv->n_cnt++];
		*c = (struct count){ d->id, d->objects, d->bytes, d->load, d->load_requests, NULL };
		if (d->load && mv->n->o.range_split_load && d->load_split_key[0])
			c->split_key = strdup(d->load_split_key);
	}
	auto_next(mv);
}

static void auto_next(struct node_mover *mv)
{
	if (mv->gi == mv->n_groups) {
		auto_decide(mv);
		return;
	}
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = "";
	q.group = mv->groups[mv->gi++];
	if (meta_client_call_direct(mv->c, META_M_GET_RANGES, &q.base, on_counts, mv))
		auto_end(mv);
}

static void auto_start(struct node_mover *mv)
{
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_groups(mv->n->root->state, &v, &cnt))
		return;
	mv->groups = calloc(cnt + 1, sizeof(*mv->groups));
	for (size_t i = 0; i < cnt; i++) {
		if (mv->groups && !v[i]->deleted)
			mv->groups[mv->n_groups++] = v[i]->id;
		meta_state_free_msg(v[i]);
	}
	free(v);
	if (!mv->groups || !mv->n_groups) {
		auto_end(mv);
		return;
	}
	mv->running = true;
	auto_next(mv);
}

void node_move_tick(struct meta_node *n, uint64_t now, bool leader)
{
	struct node_mover *mv = n->mover;
	if (!leader) {
		if (mv && mv->c) {
			meta_client_close(mv->c);   /* a driver in flight ends (ESHUTDOWN) */
			mv->c = NULL;
		}
		return;
	}
	if (n->n_groups < 2 && !mv)
		return;   /* no range group: nothing ever moves */
	if (!(mv = mover(n)) || mv->running || now - mv->last_ms < MOVE_POLL_MS)
		return;
	mv->last_ms = now;
	bool pending = move_pending(n);
	const struct meta_node_opts *o = &n->o;
	unsigned poll = o->range_poll_ms ? o->range_poll_ms : 5000;
	if (!o->range_poll_ms && o->range_split_load) {
		/* two looks at least within the seconds a load must last */
		unsigned half = load_secs(o) * 500;
		poll = half < MOVE_POLL_MS ? MOVE_POLL_MS : half < poll ? half : poll;
	}
	bool look = (o->range_split_objects || o->range_split_bytes || o->range_merge_objects ||
		     o->range_split_load) &&
		    now - mv->last_auto_ms >= poll;
	if (!pending && !look)
		return;
	if (!mv->c && mover_client(mv))
		return;
	if (pending) {
		if (meta_move_drive(mv->c, n->loop, "", NULL, on_driven, mv) == 0)
			mv->running = true;
		return;
	}
	mv->last_auto_ms = now;
	auto_start(mv);
}

void node_move_close(struct meta_node *n)
{
	struct node_mover *mv = n->mover;
	if (!mv)
		return;
	if (mv->c)
		meta_client_close(mv->c);
	auto_end(mv);
	free(mv->tracks);
	free(mv);
	n->mover = NULL;
}
