/*
 * admin_api_gc.c — GET /api/v1/gc: the shard GC's state (issue 20).
 *
 * The queue is meta's: every Raft group keeps the GC entries of the
 * records it held (the root, then each live range group of GetRanges), so
 * each group's queue is read with ListGc, page after page: its length
 * (ListGc's queue_length), the bytes its entries' records held, and its
 * oldest entry (the head: entries are in generation order). Reading is
 * bounded: at most GC_SCAN_MAX entries a request; beyond, bytes_pending
 * is a lower bound and "complete" is false. The queue stores no time of
 * queueing, so the oldest entry's age is told by its record's own
 * last-modified time (it was queued after that: an upper bound).
 *
 * The worker's part (rounds, entries freed, the last round) is this
 * process's gw_gc worker (gw_gc_status), null where the process runs none.
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/admin_api_int.h"
#include "gateway/gw_gc.h"

#define GC_SCAN_MAX 10000     /* entries read per request */
#define GC_PAGE 1000
#define GC_GROUPS 64

struct gc_group {
	uint64_t id, entries;
	bool has_oldest;
	uint64_t oldest_gen, oldest_mtime_ms;
};

struct gc_state {
	struct gc_group g[GC_GROUPS];
	size_t n, gi;
	uint64_t after_gen;
	uint32_t after_seq;
	uint64_t scanned, bytes;
	bool complete;
};

static void reply(struct admin_call *c, struct gc_state *s)
{
	uint64_t entries = 0, oldest_mtime = 0;
	for (size_t i = 0; i < s->n; i++) {
		entries += s->g[i].entries;
		if (s->g[i].has_oldest && (!oldest_mtime || s->g[i].oldest_mtime_ms < oldest_mtime))
			oldest_mtime = s->g[i].oldest_mtime_ms;
	}
	uint64_t now = admin_wall_ms();
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "queue");
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "entries", entries);
	jsonw_ku64(&w, "bytes_pending", s->bytes);
	jsonw_ku64(&w, "scanned", s->scanned);
	jsonw_kbool(&w, "complete", s->complete);
	jsonw_ku64(&w, "scan_limit", GC_SCAN_MAX);
	jsonw_key(&w, "oldest_record_mtime_ms");
	oldest_mtime ? jsonw_u64(&w, oldest_mtime) : jsonw_null(&w);
	jsonw_key(&w, "oldest_age_ms");
	oldest_mtime ? jsonw_u64(&w, now > oldest_mtime ? now - oldest_mtime : 0) : jsonw_null(&w);
	jsonw_key(&w, "groups");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < s->n; i++) {
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "group", s->g[i].id);
		jsonw_ku64(&w, "entries", s->g[i].entries);
		if (s->g[i].has_oldest)
			jsonw_ku64(&w, "oldest_generation", s->g[i].oldest_gen);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	jsonw_key(&w, "worker");
	struct admin_api *api = c->api;
	if (!api->gc) {
		jsonw_null(&w);
	} else {
		struct gw_gc_status st;
		gw_gc_status(api->gc, &st);
		jsonw_obj_begin(&w);
		jsonw_kbool(&w, "running", st.running);
		jsonw_ku64(&w, "rounds", st.rounds);
		jsonw_ku64(&w, "freed_entries", st.freed);
		jsonw_ku64(&w, "freed_bytes", st.freed_bytes);
		jsonw_ku64(&w, "failed_entries", st.failed);
		jsonw_ku64(&w, "skipped_entries", st.skipped);
		jsonw_key(&w, "last_round_end_ms");
		st.last_round_end_ms ? jsonw_u64(&w, st.last_round_end_ms) : jsonw_null(&w);
		jsonw_ku64(&w, "last_round_freed", st.last_round_freed);
		jsonw_ku64(&w, "last_round_failed", st.last_round_failed);
		jsonw_obj_end(&w);
	}
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void list_page(struct admin_call *c, struct gc_state *s);

static void on_page(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct gc_state *s = admin_call_state(c);
	if (!admin_call_live(c))
		return;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__ListGcResponse *r = (const void *)resp;
	struct gc_group *g = &s->g[s->gi];
	g->entries = r->queue_length;
	for (size_t i = 0; i < r->n_entries; i++) {
		const Iolake__Meta__GcEntry *e = r->entries[i];
		if (!g->has_oldest) {
			g->has_oldest = true;
			g->oldest_gen = e->generation;
			g->oldest_mtime_ms = e->record ? e->record->mtime_ms : 0;
		}
		if (e->record)
			s->bytes += e->record->size;
		s->after_gen = e->generation;
		s->after_seq = e->seq;
	}
	s->scanned += r->n_entries;
	bool more = r->is_truncated && r->n_entries;
	if (more && s->scanned >= GC_SCAN_MAX) {
		s->complete = false;
		more = false;
	}
	if (!more) {
		s->gi++;
		s->after_gen = 0;
		s->after_seq = 0;
	}
	if (s->gi < s->n && s->scanned < GC_SCAN_MAX)
		list_page(c, s);
	else {
		if (s->gi < s->n)
			s->complete = false;
		reply(c, s);
	}
}

static void list_page(struct admin_call *c, struct gc_state *s)
{
	Iolake__Meta__ListGcRequest q = IOLAKE__META__LIST_GC_REQUEST__INIT;
	q.start_after_generation = s->after_gen;
	q.start_after_seq = s->after_seq;
	q.max_entries = GC_PAGE;
	q.group = s->g[s->gi].id;
	int rc = admin_meta_call(c, META_M_LIST_GC, &q.base, on_page, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

static void on_groups(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct gc_state *s = admin_call_state(c);
	if (!admin_call_live(c))
		return;
	const Iolake__Meta__GetRangesResponse *r = (const void *)resp;
	s->g[0].id = 0;
	s->n = 1;
	/* A member older than ranges (-EOPNOTSUPP): the root alone. */
	if (err && err != -EOPNOTSUPP) {
		admin_reply_meta_error(c, err);
		return;
	}
	for (size_t i = 0; !err && i < r->n_groups && s->n < GC_GROUPS; i++)
		s->g[s->n++].id = r->groups[i];
	if (!err && r->n_groups >= GC_GROUPS)
		s->complete = false;
	list_page(c, s);
}

void admin_h_gc(struct admin_call *c)
{
	struct gc_state *s = calloc(1, sizeof(*s));
	if (!s) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	s->complete = true;
	admin_call_set_state(c, s, NULL);
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = "";
	int rc = admin_meta_call(c, META_M_GET_RANGES, &q.base, on_groups, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}
