/*
 * gw_gc.c — the shard GC worker (contract in gw_gc.h).
 *
 * Why: meta queues every record a committed op replaced or deleted under
 * its 'G' keys (meta/state.c gc_record, gc_part: overwrites, deletes,
 * CompleteMultipart over an object, parts replaced or left out, aborts).
 * The gateway that commits such an op deletes the old shards right away,
 * best effort; when that fails (an OSD down or unreachable, the gateway
 * killed between its commit and its deletes) the shards would leak. This
 * worker retries from the queue until they are gone, then acks.
 *
 * Groups: each Raft group keeps the queue of the records it holds (the
 * root, and each range group: meta.proto RangeDesc). A cycle reads the
 * live groups from the root (GetRanges) and walks the root's queue, then
 * each group's in turn, acking into the group that listed the entry.
 *
 * A round, every interval_ms while the map is known (which means this
 * gateway reached meta): ListGc pages (page_entries) from a cursor kept
 * across rounds (a round resumes where the last stopped, and starts over
 * from the head after it reached the end, so entries that keep failing do
 * not hide those behind them); for each entry every shard layout its
 * record names is deleted through gw_rec's gw_rec_drop_layout (the
 * code path the commit-time deletes take: gw_data_delete on the PG's
 * current OSDs; NOT_FOUND counts as deleted), `window` layouts at a time;
 * an entry whose deletes all succeeded is acked with GcAck.entries, the
 * exact (generation, seq) pairs, one Submit per page. Acking by
 * generation would need every entry of a generation in one page, and one
 * Complete can queue up to 10,001 entries. Entries that failed stay
 * queued and are retried next round; a round logs its failures once. A
 * round looks at most round_entries entries; when it stopped at that
 * bound having freed something, the next starts after a short pause
 * instead of a full interval, so a backlog drains without ever having
 * more than `window` delete walks in flight next to the S3 traffic.
 *
 * A layout that does not decode (or does not fit its record) can never be
 * freed by anyone: the entry is acked and counted as skipped, with an
 * error logged, rather than retried forever.
 *
 * Several gateways may run workers on one queue at once: a shard delete
 * is idempotent (NOT_FOUND counts as done), GcAck of an entry already gone
 * is a no-op (meta/state.c op_gc_ack), so the worst case of two workers
 * on one entry is a second round of DeleteShard calls answered NOT_FOUND.
 *
 * Safety — the queue names only shards no live record names:
 *   - shard keys are (pg, object_id || be32(segment), shard index) and the
 *     object id is 16 random bytes drawn per gw_data PUT
 *     (gw_data_put_start with object_id NULL, which every caller passes);
 *     a record names the ids of the PUTs that wrote its data (one layout,
 *     or one per multipart segment);
 *   - no path copies a layout into a second live record: CopyObject and
 *     UploadPartCopy read the source through gw_data GETs and write new
 *     shards under a new PUT (s3_copy.c); SetObjectTags keeps the
 *     generation and queues nothing; CompleteMultipart moves the parts it
 *     names into the object's segments and deletes their part records
 *     without queueing them (meta/state.c drop_parts skips `keep`), so a
 *     queued part is one no object names, and a later overwrite of the
 *     completed object queues the segments once, with the object;
 *   - meta queues a record only in the op that stops naming it, and the
 *     queue entry is the copy taken at that moment; a generation is never
 *     reused, so no later op can make a queued record live again.
 *   - a record whose layouts are in part rows (issue 18) is queued naming
 *     only its version; FreePartRows refuses (CONFLICT) while the key's
 *     current record, a version or an open upload names those rows, so
 *     the rows it turns into entries are ones no live record names.
 *   Not covered here: shards of PUTs that never committed (a gateway
 *   killed mid-PUT) are in no record and no queue entry; shards left on an
 *   OSD that has since left the PG's set (the delete goes to the PG's
 *   current OSDs) are in no current OSD's view. Each OSD's orphan sweep
 *   (osd/sweep.h) finds both against meta's reference index (CheckShards)
 *   and deletes them after --orphan-grace.
 *
 * Thread: the gateway loop. Memory: one page (its copy of the response
 * and a slot per entry) at a time.
 */
#include "gateway/gw_gc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/err.h"
#include "common/log.h"
#include "common/metrics.h"
#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "meta/client.h"

#define ROUND_DEFAULT 256
#define PAGE_DEFAULT 128
#define WINDOW_DEFAULT 4
#define BACKLOG_PAUSE_MS 100   /* between rounds while a backlog drains */
#define GC_GROUPS_MAX 1025      /* the root and META_GROUPS_MAX range groups */

/* One queue entry of the page being worked on. */
struct slot {
	struct gw_gc *g;
	size_t next;               /* next layout of the record to start */
	size_t n_layouts;
	unsigned inflight;         /* layouts whose delete is running */
	uint32_t shards_failed;    /* shard deletes that failed */
	int start_err;             /* a layout that could not start (0: none) */
	bool failed, skipped;
	bool rows_started;         /* a part-rows record: FreePartRows sent */
	bool rows_routed;          /* ... its second pass, routed by key */
	const Iolake__Meta__ObjectRecord *rec;
};

struct gw_gc {
	struct meta_client *mc;    /* ListGc, GcAck */
	struct gw_map *map;        /* the PGs' current OSDs */
	struct gw_data *data;      /* the deletes */
	struct gw_gc_opts opt;
	uv_timer_t timer;
	bool closing, timer_closed, running;
	bool kicked;               /* gw_gc_kick during a round: another soon */
	unsigned pending;          /* meta calls + deletes whose callback is owed */
	/* The cursor: the group whose queue is walked (every Raft group
	 * keeps the GC entries of the records it holds: the root, then each
	 * range group of the root's table, read when a cycle starts), and
	 * the last entry looked at in it (0, 0: the head). */
	uint64_t groups[GC_GROUPS_MAX];
	size_t n_groups, gi;       /* groups[0] is the root */
	uint64_t after_gen;
	uint32_t after_seq;
	/* This round. */
	uint32_t looked, freed, failed, skipped;
	uint64_t shards_failed;    /* shard deletes that failed, all entries */
	uint64_t first_failed_gen;
	uint32_t first_failed_seq;
	int first_err;             /* start error, or IOL_EUNAVAILABLE for shard failures */
	bool more;                 /* the round stopped with entries after the cursor */
	/* This page. */
	Iolake__Meta__ListGcResponse *page;
	struct slot *slots;
	size_t cur;                /* next entry whose layouts are to start */
	unsigned inflight;         /* layouts being deleted */
	/* Since start, for gw_gc_status (the admin API's GET /api/v1/gc). */
	struct gw_gc_status st;
	/* Metrics (NULL when the registry refused them). */
	struct metrics_counter *m_freed, *m_failed, *m_skipped, *m_rounds;
	struct metrics_gauge *m_queue;
};

static void list_page(struct gw_gc *g);
static void pump(struct gw_gc *g);

static uint64_t cur_group(const struct gw_gc *g)
{
	return g->gi < g->n_groups ? g->groups[g->gi] : 0;
}

static void count(struct metrics_counter *c, uint64_t n)
{
	if (c && n)
		metrics_counter_add(c, n);
}

static void page_free(struct gw_gc *g)
{
	if (g->page)
		iolake__meta__list_gc_response__free_unpacked(g->page, NULL);
	g->page = NULL;
	free(g->slots);
	g->slots = NULL;
	g->cur = 0;
}

static void maybe_free(struct gw_gc *g)
{
	if (!g->closing || !g->timer_closed || g->pending)
		return;
	page_free(g);
	free(g);
}

static void on_tick(uv_timer_t *t);
static void list_groups(struct gw_gc *g);

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void arm(struct gw_gc *g, uint64_t delay_ms)
{
	if (!g->closing)
		uv_timer_start(&g->timer, on_tick, delay_ms, 0);
}

/* ------------------------------------------------------------ rounds */

static void round_end(struct gw_gc *g)
{
	page_free(g);
	g->running = false;
	if (!g->more) {          /* reached the end: the next round starts over */
		g->after_gen = 0;
		g->after_seq = 0;
		g->gi = 0;
		g->n_groups = 0;
	}
	count(g->m_rounds, 1);
	g->st.rounds++;
	g->st.last_round_end_ms = wall_ms();
	g->st.last_round_freed = g->freed;
	g->st.last_round_failed = g->failed;
	if (g->failed)
		LOG_WARN("gc: entries not freed, retried next round",
			 "failed=%u shard_deletes_failed=%llu freed=%u first_gen=%llu first_seq=%u "
			 "err=%s", g->failed, (unsigned long long)g->shards_failed, g->freed,
			 (unsigned long long)g->first_failed_gen, g->first_failed_seq,
			 iol_strerror(g->first_err));
	else if (g->freed || g->skipped)
		LOG_INFO("gc: round", "freed=%u skipped=%u more=%d", g->freed, g->skipped,
			 g->more);
	bool backlog = g->more && g->freed > 0;
	arm(g, backlog ? BACKLOG_PAUSE_MS : g->kicked ? GW_GC_KICK_MS : g->opt.interval_ms);
	g->kicked = false;
}

void gw_gc_kick(struct gw_gc *g)
{
	if (!g || g->closing)
		return;
	if (g->running)
		g->kicked = true;
	else if (uv_timer_get_due_in(&g->timer) > GW_GC_KICK_MS)
		arm(g, GW_GC_KICK_MS);
}

static void on_groups(void *ud, int err, const ProtobufCMessage *resp)
{
	struct gw_gc *g = ud;
	g->pending--;
	if (g->closing) {
		maybe_free(g);
		return;
	}
	const Iolake__Meta__GetRangesResponse *r = (const void *)resp;
	g->groups[0] = 0;
	g->n_groups = 1;
	g->gi = 0;
	/* A member older than ranges (-EOPNOTSUPP): the root alone. */
	for (size_t i = 0; !err && i < r->n_groups && g->n_groups < GC_GROUPS_MAX; i++)
		g->groups[g->n_groups++] = r->groups[i];
	if (err && err != -EOPNOTSUPP)
		LOG_WARN("gc: cannot read the range groups; the root's queue only",
			 "err=%s", iol_strerror(err));
	list_page(g);
}

/* The groups whose queues a cycle walks: GetRanges of the root. */
static void list_groups(struct gw_gc *g)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = "";
	int rc = meta_client_call(g->mc, META_M_GET_RANGES, &q.base, on_groups, g);
	if (rc) {
		g->more = false;
		round_end(g);
		return;
	}
	g->pending++;
}

static void round_start(struct gw_gc *g)
{
	if (g->closing || g->running)
		return;
	if (gw_map_epoch(g->map) == 0) {   /* no map: meta not reached yet */
		arm(g, g->opt.interval_ms);
		return;
	}
	g->running = true;
	g->looked = g->freed = g->failed = g->skipped = 0;
	g->shards_failed = 0;
	g->first_err = 0;
	g->more = false;
	if (g->n_groups == 0)
		list_groups(g);
	else
		list_page(g);
}

static void on_tick(uv_timer_t *t)
{
	round_start(t->data);
}

/* Continue after a page: the next page, or the end of the round. */
static void next_page(struct gw_gc *g)
{
	page_free(g);
	if (g->closing)
		return;
	if (!g->more && g->gi + 1 < g->n_groups) {
		/* this group's queue is done: the next group's, from its head */
		g->gi++;
		g->after_gen = 0;
		g->after_seq = 0;
		g->more = true;
	}
	if (g->more && g->looked < g->opt.round_entries)
		list_page(g);
	else
		round_end(g);
}

/* ------------------------------------------------------------ acks */

static void on_ack(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct gw_gc *g = ud;
	g->pending--;
	if (g->closing) {
		maybe_free(g);
		return;
	}
	if (err || res->status != IOLAKE__META__STATUS__STATUS_OK)
		/* The shards are gone; the entries stay and the next round
		 * finds their shards NOT_FOUND and acks again. */
		LOG_WARN("gc: ack failed", "err=%s status=%d", iol_strerror(err),
			 err ? -1 : (int)res->status);
	next_page(g);
}

/* Every layout of the page is done: ack the entries freed (or skipped). */
static void page_done(struct gw_gc *g)
{
	const Iolake__Meta__ListGcResponse *p = g->page;
	size_t n_ack = 0;
	for (size_t i = 0; i < p->n_entries; i++) {
		struct slot *s = &g->slots[i];
		if (s->failed) {
			g->shards_failed += s->shards_failed;
			if (!g->failed++) {
				g->first_failed_gen = p->entries[i]->generation;
				g->first_failed_seq = p->entries[i]->seq;
				g->first_err = s->start_err ? s->start_err : IOL_EUNAVAILABLE;
			}
			count(g->m_failed, 1);
			g->st.failed++;
			continue;
		}
		s->skipped ? g->skipped++ : g->freed++;
		if (s->skipped) {
			g->st.skipped++;
		} else {
			g->st.freed++;
			if (p->entries[i]->record)
				g->st.freed_bytes += p->entries[i]->record->size;
		}
		count(s->skipped ? g->m_skipped : g->m_freed, 1);
		n_ack++;
	}
	if (!n_ack) {
		next_page(g);
		return;
	}
	Iolake__Meta__GcKey *keys = calloc(n_ack, sizeof(*keys));
	Iolake__Meta__GcKey **kp = calloc(n_ack, sizeof(*kp));
	int rc = -ENOMEM;
	if (keys && kp) {
		size_t j = 0;
		for (size_t i = 0; i < p->n_entries; i++) {
			if (g->slots[i].failed)
				continue;
			iolake__meta__gc_key__init(&keys[j]);
			keys[j].generation = p->entries[i]->generation;
			keys[j].seq = p->entries[i]->seq;
			kp[j] = &keys[j];
			j++;
		}
		Iolake__Meta__GcAck ack = IOLAKE__META__GC_ACK__INIT;
		ack.entries = kp;
		ack.n_entries = n_ack;
		Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
		op.body_case = IOLAKE__META__OP__BODY_GC_ACK;
		op.gc_ack = &ack;
		/* op is copied */
		rc = meta_client_submit_group(g->mc, cur_group(g), &op, on_ack, g);
	}
	free(kp);
	free(keys);
	if (rc) {
		LOG_WARN("gc: ack not sent", "err=%s", iol_strerror(rc));
		next_page(g);
		return;
	}
	g->pending++;
}

/* ------------------------------------------------------------ deletes */

static void on_deleted(void *ud, int status, uint32_t failed)
{
	struct slot *s = ud;
	struct gw_gc *g = s->g;
	g->pending--;
	if (g->closing) {
		maybe_free(g);
		return;
	}
	g->inflight--;
	s->inflight--;
	if (status) {
		s->failed = true;
		s->shards_failed += failed;
	}
	pump(g);
}

/* Issue 18: a queued record whose layouts are in part rows names no
 * shards itself. Meta turns its rows, a bounded batch per FreePartRows,
 * into ordinary entries of the group holding them, which later pages
 * free; the entry is acked once no row is left. Two passes: first in the
 * group that queued the entry (where the rows were when the record went;
 * still right when its bucket has since been deleted, which leaves no
 * route), then routed by key (a split or merge since may have moved the
 * rows with their key to another group; a deleted bucket routes to the
 * root, which finds none). */
static int rows_submit(struct slot *s);

static void on_rows_freed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct slot *s = ud;
	struct gw_gc *g = s->g;
	g->pending--;
	if (g->closing) {
		maybe_free(g);
		return;
	}
	const Iolake__Meta__ObjectRecord *r = s->rec;
	bool ok = !err && res->status == IOLAKE__META__STATUS__STATUS_OK;
	if (ok && (res->part_rows_more || !s->rows_routed)) {
		if (!res->part_rows_more)
			s->rows_routed = true;   /* this group is done: now by key */
		int rc = rows_submit(s);
		if (rc == 0)
			return;   /* still in flight */
		s->failed = true;
		s->start_err = rc;
	} else if (!err && res->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		/* A live record or upload names them: not garbage. */
		LOG_ERROR("gc: queued record's part rows are still named; left alone",
			  "bucket=%s key=%s upload=%s", r->bucket, LOG_Q(r->key), r->upload_id);
		s->skipped = true;
	} else if (err || res->status != IOLAKE__META__STATUS__STATUS_OK) {
		s->failed = true;
		s->start_err = err ? err : IOL_EUNAVAILABLE;
	}
	g->inflight--;
	s->inflight--;
	pump(g);
}

static int rows_submit(struct slot *s)
{
	const Iolake__Meta__ObjectRecord *r = s->rec;
	Iolake__Meta__FreePartRows f = IOLAKE__META__FREE_PART_ROWS__INIT;
	f.bucket = r->bucket;
	f.key = r->key;
	f.upload_id = r->upload_id;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_FREE_PART_ROWS;
	op.free_part_rows = &f;
	int rc = s->rows_routed ? meta_client_submit(s->g->mc, &op, on_rows_freed, s)
				: meta_client_submit_group(s->g->mc, cur_group(s->g), &op,
							   on_rows_freed, s);
	if (rc == 0)
		s->g->pending++;
	return rc;
}

/* Start the next layout of the current entry; false when it has none
 * left (the caller moves on). */
static bool start_one(struct gw_gc *g, struct slot *s, const Iolake__Meta__ObjectRecord *r)
{
	if (r && r->part_rows && r->upload_id && !s->rows_started && !s->failed) {
		s->rows_started = true;
		s->rec = r;
		int rc = rows_submit(s);
		if (rc) {
			s->failed = true;
			s->start_err = rc;
		} else {
			s->inflight++;
			g->inflight++;
		}
		return false;
	}
	if (s->failed || s->next >= s->n_layouts)
		return false;   /* a failed entry is retried whole next round */
	int rc = gw_rec_drop_layout(g->map, g->data, r, s->next++, on_deleted, s);
	if (rc == 0) {
		s->inflight++;
		g->inflight++;
		g->pending++;
	} else if (rc == IOL_ECORRUPT || rc == -EINVAL) {
		if (!s->skipped)
			LOG_ERROR("gc: record names an unreadable layout; its shards cannot be freed",
				  "bucket=%s key=%s layout=%zu err=%s", r->bucket, r->key,
				  s->next - 1, iol_strerror(rc));
		s->skipped = true;
	} else if (rc != 1) {
		s->failed = true;
		s->start_err = rc;
	}
	return true;
}

static void pump(struct gw_gc *g)
{
	const Iolake__Meta__ListGcResponse *p = g->page;
	while (g->cur < p->n_entries && g->inflight < g->opt.window) {
		struct slot *s = &g->slots[g->cur];
		if (!start_one(g, s, p->entries[g->cur]->record))
			g->cur++;
	}
	if (g->cur == p->n_entries && !g->inflight)
		page_done(g);
}

/* ------------------------------------------------------------ pages */

/* Keep the response beyond its callback: pack and unpack it. */
static Iolake__Meta__ListGcResponse *copy_page(const Iolake__Meta__ListGcResponse *r)
{
	size_t n = iolake__meta__list_gc_response__get_packed_size(r);
	uint8_t *b = malloc(n ? n : 1);
	if (!b)
		return NULL;
	iolake__meta__list_gc_response__pack(r, b);
	Iolake__Meta__ListGcResponse *c = iolake__meta__list_gc_response__unpack(NULL, n, b);
	free(b);
	return c;
}

static void on_page(void *ud, int err, const ProtobufCMessage *resp)
{
	struct gw_gc *g = ud;
	g->pending--;
	if (g->closing) {
		maybe_free(g);
		return;
	}
	const Iolake__Meta__ListGcResponse *r = (const void *)resp;
	if (err || !(g->page = copy_page(r))) {
		LOG_WARN("gc: cannot list the queue", "err=%s", iol_strerror(err ? err : -ENOMEM));
		g->more = true;   /* keep the cursor */
		round_end(g);
		return;
	}
	if (g->m_queue)
		metrics_gauge_set(g->m_queue, (int64_t)g->page->queue_length);
	size_t n = g->page->n_entries;
	g->more = g->page->is_truncated;
	if (n == 0) {
		next_page(g);
		return;
	}
	g->slots = calloc(n, sizeof(*g->slots));
	if (!g->slots) {
		g->more = true;
		round_end(g);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__GcEntry *e = g->page->entries[i];
		g->slots[i].g = g;
		/* An entry without a record names nothing: ack it. */
		g->slots[i].n_layouts = e->record ? gw_rec_n_layouts(e->record) : 0;
	}
	/* The cursor moves past the page now: failed entries are found
	 * again when a later round comes back to the head. */
	g->after_gen = g->page->entries[n - 1]->generation;
	g->after_seq = g->page->entries[n - 1]->seq;
	g->looked += (uint32_t)n;
	g->cur = 0;
	g->inflight = 0;
	pump(g);
}

static void list_page(struct gw_gc *g)
{
	Iolake__Meta__ListGcRequest q = IOLAKE__META__LIST_GC_REQUEST__INIT;
	q.start_after_generation = g->after_gen;
	q.start_after_seq = g->after_seq;
	q.group = cur_group(g);
	uint32_t left = g->opt.round_entries - g->looked;
	q.max_entries = left < g->opt.page_entries ? left : g->opt.page_entries;
	int rc = meta_client_call(g->mc, META_M_LIST_GC, &q.base, on_page, g);
	if (rc) {
		LOG_WARN("gc: cannot list the queue", "err=%s", iol_strerror(rc));
		g->more = true;
		round_end(g);
		return;
	}
	g->pending++;
}

/* ------------------------------------------------------------ lifecycle */

static void on_timer_closed(uv_handle_t *h)
{
	struct gw_gc *g = h->data;
	g->timer_closed = true;
	maybe_free(g);
}

int gw_gc_start(uv_loop_t *loop, struct meta_client *mc, struct gw_map *map, struct gw_data *data,
		struct metrics_registry *reg, const struct gw_gc_opts *opts, struct gw_gc **out)
{
	if (!opts || !opts->interval_ms)
		return -EINVAL;
	struct gw_gc *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->mc = mc;
	g->map = map;
	g->data = data;
	g->opt = *opts;
	if (!g->opt.round_entries)
		g->opt.round_entries = ROUND_DEFAULT;
	if (!g->opt.page_entries)
		g->opt.page_entries = PAGE_DEFAULT;
	if (g->opt.page_entries > META_LIST_GC_MAX)
		g->opt.page_entries = META_LIST_GC_MAX;
	if (!g->opt.window)
		g->opt.window = WINDOW_DEFAULT;
	uv_timer_init(loop, &g->timer);
	g->timer.data = g;
	/* A second worker in one registry (several gateways in one process)
	 * gets NULL here and counts nothing. */
	static const char *help = "shard-GC queue entries, by outcome";
	g->m_freed = metrics_counter_new(reg, "iolake_gw_gc_entries_total", help,
					 METRICS_LABELS("result", "freed"));
	g->m_failed = metrics_counter_new(reg, "iolake_gw_gc_entries_total", help,
					  METRICS_LABELS("result", "failed"));
	g->m_skipped = metrics_counter_new(reg, "iolake_gw_gc_entries_total", help,
					   METRICS_LABELS("result", "skipped"));
	g->m_rounds = metrics_counter_new(reg, "iolake_gw_gc_rounds_total",
					  "shard-GC rounds run", NULL);
	g->m_queue = metrics_gauge_new(reg, "iolake_gw_gc_queue_entries",
				       "meta's shard-GC queue length at the last ListGc", NULL);
	arm(g, g->opt.interval_ms);
	*out = g;
	return 0;
}

void gw_gc_close(struct gw_gc *g)
{
	if (!g || g->closing)
		return;
	g->closing = true;
	uv_timer_stop(&g->timer);
	uv_close((uv_handle_t *)&g->timer, on_timer_closed);
}

void gw_gc_status(const struct gw_gc *g, struct gw_gc_status *out)
{
	*out = g->st;
	out->running = g->running;
}
