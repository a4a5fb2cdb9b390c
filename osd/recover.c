/*
 * recover.c — the per-PG recovery driver (contracts in recover.h).
 *
 * Owns: a map watch (meta/mapwatch.h, whose OSD channels every call here
 * uses, the call to this OSD itself included), a meta client for ReportPgs
 * and FlagPgs, one state per PG of the map, a fixed pool of max_pgs scan
 * slots, each with stripes_inflight rebuild jobs, a token bucket, and one
 * 250 ms tick (retries, backstop rescans, rates, reports, flags).
 *
 * A scan of PG p runs three phases against one signature (the PG's slot
 * OSDs and up flags when it started):
 *   BAD    page ListBadShards of every up slot's OSD from pg p on: those
 *          shards count as missing;
 *   COUNT  page ListShards(p) of every up slot's OSD and merge the pages by
 *          object id (k-way merge, one page per OSD in memory): counts the
 *          stripes, the ones to rebuild, their bytes and the unfound;
 *   REBUILD (only when COUNT found something) the same merge again, each
 *          rebuildable stripe handed to a job: GetShard k sources (data
 *          slots first), check crcs, ec_decode the rest, check the crc of
 *          every other present shard against its listing, PutShard the
 *          missing ones to their slots' OSDs.
 * Invariant: shard i counts only on slot i's OSD; nothing is written
 * unless k sources and every other present shard agree (crc32c), and no
 * new call starts once the PG's signature moved or a call failed: the scan
 * winds down (jobs in flight finish) and the PG is retried.
 *
 * Thread: the OSD's loop. Does not: delete anything (strays of old slot
 * holders, orphans, stale shards of deleted objects stay), read the local
 * store directly, or decide PG state for the cluster (meta does, from the
 * reports).
 */
#include "osd/recover.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/buf.h"
#include "common/crc.h"
#include "common/ec.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "meta/client.h"
#include "meta/mapwatch.h"
#include "osd/service.h"
#include "proto/osd.pb-c.h"

#define TICK_MS 250
#define PAGE_LIMIT 1000
#define BAD_MAX 4096                 /* bad-shard records kept per scan */
#define FLAG_MAX 256                 /* PGs batched into one FlagPgs */
#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 10000
#define ERROR_RETRY_MS 60000         /* after inconsistent stripes */
#define RATE_WINDOW_MS 10000         /* EWMA horizon of the rates */
#define MAX_JOBS 16

/* Osd service method numbers (osd.proto order). */
enum { OSD_M_PUT, OSD_M_GET, OSD_M_DELETE, OSD_M_STAT, OSD_M_STATS, OSD_M_LIST, OSD_M_STATUS,
       OSD_M_LIST_BAD };
#define OSD_SVC (&iolake__osd__osd__descriptor)

/* ------------------------------------------------------------ pure */

int osd_recover_oid_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);
	if (c)
		return c < 0 ? -1 : 1;
	/* Padded with zeros: a longer id is greater only past a nonzero
	 * byte, else by length (rec.h's tie-break byte). */
	const uint8_t *l = alen > blen ? a : b;
	size_t ll = alen > blen ? alen : blen;
	for (size_t i = n; i < ll; i++)
		if (l[i])
			return alen > blen ? 1 : -1;
	return alen == blen ? 0 : (alen > blen ? 1 : -1);
}

bool osd_recover_sig_eq(const struct osd_recover_sig *a, const struct osd_recover_sig *b)
{
	if (a->width != b->width || a->up_mask != b->up_mask)
		return false;
	return memcmp(a->osds, b->osds, a->width * sizeof(a->osds[0])) == 0;
}

int osd_recover_primary_slot(const struct osd_recover_sig *s)
{
	for (uint32_t i = 0; i < s->width; i++)
		if (s->osds[i] != OSD_RECOVER_NONE && (s->up_mask >> i & 1))
			return (int)i;
	return -1;
}

struct osd_recover_stripe_class osd_recover_classify(const struct osd_recover_sig *s,
						     unsigned k, uint32_t present_mask)
{
	struct osd_recover_stripe_class c = { 0 };
	for (uint32_t i = 0; i < s->width; i++) {
		if (present_mask >> i & 1)
			c.present++;
		else if (s->osds[i] != OSD_RECOVER_NONE && (s->up_mask >> i & 1))
			c.missing |= 1u << i;
	}
	c.unfound = c.present < k;
	c.rebuild = c.missing && !c.unfound;
	return c;
}

/* ------------------------------------------------------------ state */

enum phase { PH_BAD, PH_COUNT, PH_REBUILD };

struct ent {                         /* one listed shard of the cursor's slot */
	uint8_t oid[64];
	uint8_t oid_len;
	uint32_t crc;
	uint64_t len;
};

struct cursor {                      /* one slot's OSD listing */
	bool active;                 /* slot up with an OSD */
	bool pending, more, started;
	struct ent *ents;            /* PAGE_LIMIT */
	size_t n, idx;
	uint8_t after_oid[64];       /* last key of the last page */
	uint8_t after_len;
	uint32_t after_shard, after_pg;
	struct scan *s;
	uint8_t slot;
};

struct bad {
	uint8_t oid[64];
	uint8_t oid_len;
	uint8_t slot;
};

struct job;
struct getctx {
	struct job *j;
	uint8_t slot;
};

struct job {
	struct scan *s;
	bool used;
	uint8_t oid[64];
	uint8_t oid_len;
	uint64_t len;
	uint32_t present, missing, fetched, tried, bad_src;
	bool gone;                   /* a source said NOT_FOUND: deleted meanwhile */
	uint32_t crc[16];
	unsigned pending;            /* calls in flight */
	bool failed;                 /* a put or a source failed: stripe not done */
	struct buf *buf;             /* width * len */
	struct getctx ctx[16];
	struct job *next_wait;       /* token bucket queue */
	bool waiting;
};

struct scan {
	struct osd_recover *r;
	bool used;
	uint32_t pg;
	struct osd_recover_sig sig;
	uint64_t epoch;
	unsigned k, m;
	enum phase phase;
	struct cursor cur[16];
	struct bad *bads;
	size_t n_bads;
	unsigned pending;            /* listing calls in flight */
	unsigned jobs;               /* jobs in use */
	bool failed;                 /* a call failed: wind down, retry later */
	bool superseded;             /* signature moved: wind down, requeue */
	bool recovering;             /* some missing slot holds an OSD new to it */
	uint64_t errors;             /* inconsistent stripes this scan */
	uint64_t failed_stripes;     /* rebuilds that did not complete */
	bool in_step;                /* scan_step is on the stack */
	struct job job[MAX_JOBS];
};

struct pgst {
	bool primary, queued, active, flagged, have_clean;
	struct osd_recover_sig clean;  /* signature of the last finished scan */
	struct osd_recover_sig cur;    /* in the current map */
	uint64_t epoch;                /* of the signature reported */
	struct osd_recover_sig rep;    /* signature the report describes */
	const char *state;
	uint64_t stripes, stripes_missing, bytes_missing, stripes_done, bytes_done;
	uint64_t unfound, bad_shards;
	uint32_t min_shards;
	uint64_t scan_started_ms, last_clean_ms, last_scan_end_ms, retry_at_ms;
	uint32_t backoff_ms;
	uint64_t rate_acc;             /* bytes since the last tick */
	double rate;                   /* EWMA bytes/s */
};

struct osd_recover {
	uv_loop_t *loop;
	uint32_t osd_id;
	struct osd_recover_opts o;
	struct meta_mapwatch *mw;
	struct meta_client *mc;
	struct ec_code *ec;
	unsigned k, m;
	uint64_t epoch;

	struct pgst *pgs;
	uint32_t n_pgs;
	struct scan *scans;          /* max_pgs */

	uv_timer_t tick, wake, kick; /* wake: token bucket; kick: pump after a scan */
	double tokens;
	uint64_t tokens_ms;
	struct job *wait_head, *wait_tail;

	uint64_t next_report_ms, next_flag_ms;
	bool report_inflight, flag_inflight, unimpl_logged;
	uint32_t flags[FLAG_MAX];
	size_t n_flags;

	bool stopping;
	unsigned handles;
	bool closing_handles;
	void (*done_cb)(void *arg);
	void *done_arg;

	struct osd_recover_stats st;
	char id_label[12];
	struct metrics_counter *m_bytes, *m_stripes, *m_errors;
	struct metrics_gauge *m_primary, *m_active, *m_missing;
};

static void scan_step(struct scan *s);
static void pump(struct osd_recover *r);
static void job_end(struct job *j);

static uint64_t unix_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static unsigned popcount(uint32_t x)
{
	return (unsigned)__builtin_popcount(x);
}

/* ------------------------------------------------------------ map */

static const Iolake__Meta__OsdInfo *find_osd(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	size_t lo = 0, hi = m->n_osds;
	while (lo < hi) { /* sorted by id */
		size_t mid = (lo + hi) / 2;
		if (m->osds[mid]->id == id)
			return m->osds[mid];
		if (m->osds[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < m->n_osds; i++) /* not sorted after all */
		if (m->osds[i]->id == id)
			return m->osds[i];
	return NULL;
}

static void sig_of(const Iolake__Meta__ClusterMap *m, const Iolake__Meta__PgEntry *e,
		   struct osd_recover_sig *s)
{
	memset(s, 0, sizeof(*s));
	s->width = e->n_osds < 16 ? (uint32_t)e->n_osds : 16;
	for (uint32_t i = 0; i < s->width; i++) {
		s->osds[i] = e->osds[i];
		const Iolake__Meta__OsdInfo *o =
			e->osds[i] == OSD_RECOVER_NONE ? NULL : find_osd(m, e->osds[i]);
		if (o && o->up)
			s->up_mask |= 1u << i;
	}
}

/* Slots whose OSD is down, absent, or new since the last finished scan:
 * the PG's urgency. */
static unsigned urgency(const struct pgst *p)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < p->cur.width; i++) {
		if (p->cur.osds[i] == OSD_RECOVER_NONE || !(p->cur.up_mask >> i & 1))
			n++;
		else if (p->have_clean && p->clean.osds[i] != p->cur.osds[i])
			n++;
	}
	return n;
}

static void on_map(void *arg, const Iolake__Meta__ClusterMap *m)
{
	struct osd_recover *r = arg;
	if (r->stopping)
		return;
	r->epoch = m->epoch;
	r->st.map_epoch = m->epoch;
	if (m->k && (m->k != r->k || m->m != r->m)) {
		struct ec_code *ec;
		if (ec_new(m->k, m->m, &ec) == 0) {
			ec_free(r->ec);
			r->ec = ec;
			r->k = m->k;
			r->m = m->m;
		}
	}
	if (m->n_pgs != r->n_pgs) {
		/* PG count changes only with a new cluster: start over (active
		 * scans hold their own copies and wind down below). */
		for (uint32_t i = 0; i < r->o.max_pgs; i++)
			if (r->scans[i].used)
				r->scans[i].superseded = true;
		struct pgst *np = calloc(m->n_pgs ? m->n_pgs : 1, sizeof(*np));
		if (!np)
			return;
		for (uint32_t i = 0; i < r->o.max_pgs; i++)
			if (r->scans[i].used && r->scans[i].pg < m->n_pgs)
				np[r->scans[i].pg].active = true;
		free(r->pgs);
		r->pgs = np;
		r->n_pgs = (uint32_t)m->n_pgs;
	}
	uint32_t primaries = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		const Iolake__Meta__PgEntry *e = m->pgs[pg];
		struct osd_recover_sig was = p->cur;
		sig_of(m, e, &p->cur);
		if (!osd_recover_sig_eq(&was, &p->cur)) {
			/* A scan that failed against the old slots (a peer
			 * dying, say) is no reason to wait with the new. */
			p->retry_at_ms = 0;
			p->backoff_ms = 0;
		}
		int ps = osd_recover_primary_slot(&p->cur);
		p->primary = ps >= 0 && p->cur.osds[ps] == r->osd_id;
		primaries += p->primary;
		if (!p->primary) {
			p->queued = false;
			p->state = NULL;
			continue;
		}
		if (!p->have_clean || !osd_recover_sig_eq(&p->clean, &p->cur))
			p->queued = true;
	}
	for (uint32_t i = 0; i < r->o.max_pgs; i++) {
		struct scan *s = &r->scans[i];
		if (s->used && s->pg < r->n_pgs && !osd_recover_sig_eq(&s->sig, &r->pgs[s->pg].cur))
			s->superseded = true;
	}
	r->st.pgs_primary = primaries;
	metrics_gauge_set(r->m_primary, primaries);
	pump(r);
}

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
		r->tokens -= (double)j->len * popcount(j->missing);
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
	if (have >= k) {
		job_puts(j);
		return;
	}
	unsigned want = k - have;
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
	if (res->status == RPC_OK) {
		struct pgst *p = s->pg < r->n_pgs ? &r->pgs[s->pg] : NULL;
		r->st.bytes += j->len;
		metrics_counter_add(r->m_bytes, j->len);
		if (p) {
			p->bytes_done += j->len;
			p->bytes_missing -= p->bytes_missing >= j->len ? j->len : p->bytes_missing;
			p->rate_acc += j->len;
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
	uint32_t to = j->missing | (j->bad_src & j->present);
	for (uint32_t i = 0; i < width; i++) {
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
		q.crc32c = crc32c(0, shards[i], j->len);
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

static void job_end(struct job *j)
{
	struct scan *s = j->s;
	struct osd_recover *r = s->r;
	if (j->failed && !j->gone && !scan_winding(s))
		s->failed_stripes++;
	if (!j->failed && !j->gone && !scan_winding(s)) {
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
		       uint32_t present, uint32_t missing, const uint32_t *crc)
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
	size_t bytes = (size_t)s->sig.width * len;
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

static void close_handles(struct osd_recover *r);
static void on_kick(uv_timer_t *t);

static void scan_free(struct scan *s)
{
	for (uint32_t i = 0; i < 16; i++) {
		free(s->cur[i].ents);
		s->cur[i].ents = NULL;
	}
	free(s->bads);
	s->bads = NULL;
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
			bool full = popcount(s->sig.up_mask) == s->sig.width;
			for (uint32_t i = 0; i < s->sig.width; i++)
				full &= s->sig.osds[i] != OSD_RECOVER_NONE;
			if (s->phase == PH_REBUILD) {
				/* What is left: rebuilds that did not complete
				 * (stripes deleted meanwhile are not owed). */
				p->stripes_missing = s->failed_stripes;
				if (!s->failed_stripes)
					p->bytes_missing = 0;
			}
			if (p->stripes_missing || s->errors) {
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
			if (p->stripes_done)
				LOG_INFO("pg rebuilt", "osd=%u pg=%u stripes=%" PRIu64 " bytes=%" PRIu64
					 " unfound=%" PRIu64 " state=%s", r->osd_id, s->pg,
					 p->stripes_done, p->bytes_done, p->unfound, p->state);
		}
	}
	scan_free(s);
	r->st.pgs_active--;
	metrics_gauge_set(r->m_active, r->st.pgs_active);
	if (r->stopping) {
		if (!r->st.pgs_active)
			close_handles(r);
		return;
	}
	/* Start the next PG from a clean stack, not from inside this
	 * scan's last callback. */
	uv_timer_start(&r->kick, on_kick, 0, 0);
}

/* Move to the next phase; true when the scan finished (s is free). */
static bool phase_done(struct scan *s)
{
	struct osd_recover *r = s->r;
	struct pgst *p = &r->pgs[s->pg];
	if (s->phase == PH_BAD) {
		s->phase = PH_COUNT;
		p->bad_shards = s->n_bads;
		reset_cursors(s);
		return false;
	}
	if (s->phase == PH_COUNT && p->stripes_missing) {
		s->phase = PH_REBUILD;
		p->state = active_state(s);
		reset_cursors(s);
		return false;
	}
	scan_finish(s);
	return true;
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
	if (!cl.rebuild)
		return;
	if (len_mismatch) {
		s->errors++;
		r->st.errors++;
		metrics_counter_inc(r->m_errors);
		return;
	}
	job_launch(s, oid, oid_len, len, present, cl.missing, crc);
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
		if (s->phase == PH_REBUILD && s->jobs >= r->o.stripes_inflight)
			break;
		stripe(s, min);
	}
	s->in_step = false;
}

static void scan_start(struct osd_recover *r, struct scan *s, uint32_t pg)
{
	struct pgst *p = &r->pgs[pg];
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->used = true;
	s->pg = pg;
	s->sig = p->cur;
	s->epoch = r->epoch;
	s->k = r->k;
	s->m = r->m;
	s->phase = PH_BAD;
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
	p->state = "scanning";
	p->stripes = p->stripes_missing = p->bytes_missing = 0;
	p->stripes_done = p->bytes_done = p->unfound = p->bad_shards = 0;
	p->min_shards = s->sig.width;
	p->scan_started_ms = unix_ms();
	r->st.pgs_active++;
	metrics_gauge_set(r->m_active, r->st.pgs_active);
	if (oom || !r->ec || s->sig.width != r->k + r->m || s->sig.width > EC_MAX_SHARDS ||
	    s->sig.width > 16)
		s->failed = true;
	reset_cursors(s);
	scan_step(s);
}

static void pump(struct osd_recover *r)
{
	if (r->stopping || !r->pgs)
		return;
	uint64_t now = loop_now_ms();
	for (uint32_t si = 0; si < r->o.max_pgs; si++) {
		struct scan *s = &r->scans[si];
		if (s->used)
			continue;
		int best = -1;
		unsigned best_u = 0;
		for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
			struct pgst *p = &r->pgs[pg];
			if (!p->primary || !p->queued || p->active || p->retry_at_ms > now)
				continue;
			unsigned u = urgency(p) + (p->flagged ? 1 : 0);
			if (best < 0 || u > best_u) {
				best = (int)pg;
				best_u = u;
			}
		}
		if (best < 0)
			return;
		scan_start(r, s, (uint32_t)best);
	}
}

static void on_kick(uv_timer_t *t)
{
	pump(t->data);
}

/* ------------------------------------------------------------ reports */

static void on_report(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_recover *r = ud;
	r->report_inflight = false;
	if (r->stopping)
		return;
	if (err == -EOPNOTSUPP) {
		if (!r->unimpl_logged)
			LOG_DEBUG("meta does not serve ReportPgs yet; reports dropped", "osd=%u",
				  r->osd_id);
		r->unimpl_logged = true;
		return;
	}
	if (err || !resp)
		return;
	const Iolake__Meta__ReportPgsResponse *rr = (const void *)resp;
	for (size_t i = 0; i < rr->n_rescan_pgs; i++) {
		uint32_t pg = rr->rescan_pgs[i];
		if (pg < r->n_pgs && r->pgs[pg].primary) {
			r->pgs[pg].queued = true;
			r->pgs[pg].flagged = true;
			r->pgs[pg].retry_at_ms = 0;
		}
	}
	pump(r);
}

static void send_report(struct osd_recover *r)
{
	if (r->report_inflight || !r->pgs || !r->epoch)
		return;
	uint32_t n = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++)
		n += r->pgs[pg].primary;
	Iolake__Meta__PgReport *reps = calloc(n ? n : 1, sizeof(*reps));
	Iolake__Meta__PgReport **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!reps || !ptrs) {
		free(reps);
		free(ptrs);
		return;
	}
	size_t j = 0;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		if (!p->primary)
			continue;
		Iolake__Meta__PgReport *e = &reps[j];
		iolake__meta__pg_report__init(e);
		e->pg = pg;
		/* A PG waiting for its scan describes the current map: its
		 * old counts do not apply to it. */
		bool fresh = p->active || (p->have_clean && osd_recover_sig_eq(&p->rep, &p->cur));
		const struct osd_recover_sig *sg = fresh && p->state ? &p->rep : &p->cur;
		e->epoch = fresh && p->state ? p->epoch : r->epoch;
		e->osds = (uint32_t *)sg->osds;
		e->n_osds = sg->width;
		e->up_mask = sg->up_mask;
		if (fresh && p->state) {
			e->state = (char *)p->state;
			e->stripes = p->stripes;
			e->stripes_missing = p->stripes_missing;
			e->bytes_missing = p->bytes_missing;
			e->stripes_done = p->stripes_done;
			e->bytes_done = p->bytes_done;
			e->unfound = p->unfound;
			e->min_shards = p->min_shards;
			e->bad_shards = p->bad_shards;
		} else {
			e->state = (char *)"scanning";
		}
		e->rate_bytes_per_s = (uint64_t)p->rate;
		e->scan_started_ms = p->scan_started_ms;
		e->last_clean_ms = p->last_clean_ms;
		ptrs[j] = e;
		j++;
	}
	Iolake__Meta__ReportPgsRequest q = IOLAKE__META__REPORT_PGS_REQUEST__INIT;
	q.osd_id = r->osd_id;
	q.epoch = r->epoch;
	q.pgs = ptrs;
	q.n_pgs = j;
	q.recovery_rate_limit = r->o.rate_bytes;
	r->report_inflight = true;
	if (meta_client_call(r->mc, META_M_REPORT_PGS, &q.base, on_report, r))
		r->report_inflight = false;
	free(reps);
	free(ptrs);
}

static void on_flag(void *ud, int err, const ProtobufCMessage *resp)
{
	struct osd_recover *r = ud;
	(void)resp;
	r->flag_inflight = false;
	if (err == -EOPNOTSUPP && !r->unimpl_logged && !r->stopping) {
		LOG_DEBUG("meta does not serve FlagPgs yet", "osd=%u", r->osd_id);
		r->unimpl_logged = true;
	}
}

static void send_flags(struct osd_recover *r)
{
	if (r->flag_inflight || !r->n_flags)
		return;
	Iolake__Meta__FlagPgsRequest q = IOLAKE__META__FLAG_PGS_REQUEST__INIT;
	q.pgs = r->flags;
	q.n_pgs = r->n_flags;
	q.reason = (char *)"scrub";
	r->flag_inflight = true;
	if (meta_client_call(r->mc, META_M_FLAG_PGS, &q.base, on_flag, r))
		r->flag_inflight = false;
	else
		r->n_flags = 0;
}

void osd_recover_flag_pg(struct osd_recover *r, uint32_t pg)
{
	if (r->stopping)
		return;
	if (pg < r->n_pgs && r->pgs[pg].primary) {
		r->pgs[pg].queued = true;
		r->pgs[pg].flagged = true;
		r->pgs[pg].retry_at_ms = 0;
		pump(r);
		return;
	}
	for (size_t i = 0; i < r->n_flags; i++)
		if (r->flags[i] == pg)
			return;
	if (r->n_flags < FLAG_MAX)
		r->flags[r->n_flags++] = pg; /* beyond: the hourly rescan finds it */
}

/* ------------------------------------------------------------ tick */

static void on_tick(uv_timer_t *t)
{
	struct osd_recover *r = t->data;
	uint64_t now = loop_now_ms();
	uint64_t missing = 0, unfound = 0;
	uint32_t queued = 0;
	double alpha = (double)TICK_MS / RATE_WINDOW_MS;
	for (uint32_t pg = 0; pg < r->n_pgs; pg++) {
		struct pgst *p = &r->pgs[pg];
		double inst = (double)p->rate_acc * 1000.0 / TICK_MS;
		p->rate += alpha * (inst - p->rate);
		if (p->rate < 1)
			p->rate = 0;
		p->rate_acc = 0;
		if (!p->primary)
			continue;
		missing += p->bytes_missing;
		unfound += p->unfound;
		if (p->have_clean && !p->queued && !p->active &&
		    now >= p->last_scan_end_ms + r->o.rescan_ms)
			p->queued = true;
		queued += p->queued;
	}
	r->st.bytes_missing = missing;
	r->st.unfound = unfound;
	r->st.pgs_queued = queued;
	metrics_gauge_set(r->m_missing, (int64_t)missing);
	if (now >= r->next_report_ms) {
		r->next_report_ms = now + r->o.report_ms;
		send_report(r);
	}
	if (now >= r->next_flag_ms && r->n_flags) {
		r->next_flag_ms = now + 1000;
		send_flags(r);
	}
	pump(r);
}

/* ------------------------------------------------------------ life */

static int make_metrics(struct osd_recover *r)
{
	struct metrics_registry *reg = r->o.metrics;
	const char *id = r->id_label;
#define NEW_OR_FAIL(x) \
	do {           \
		if (!(x))  \
			return errno ? -errno : -ENOMEM; \
	} while (0)
	NEW_OR_FAIL(r->m_bytes = metrics_counter_new(reg, "iolake_osd_recovery_bytes_total",
		"Shard bytes written by this OSD's recovery driver.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_stripes = metrics_counter_new(reg, "iolake_osd_recovery_stripes_total",
		"Stripes repaired by this OSD's recovery driver.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_errors = metrics_counter_new(reg, "iolake_osd_recovery_errors_total",
		"Recovery errors: inconsistent stripes, bad sources, failed puts.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_primary = metrics_gauge_new(reg, "iolake_osd_recovery_pgs_primary",
		"PGs this OSD is the primary of.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_active = metrics_gauge_new(reg, "iolake_osd_recovery_pgs_active",
		"PGs being scanned or rebuilt by this OSD now.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(r->m_missing = metrics_gauge_new(reg, "iolake_osd_recovery_bytes_missing",
		"Shard bytes still to rebuild in this OSD's primary PGs, as last counted.",
		METRICS_LABELS("osd", id)));
#undef NEW_OR_FAIL
	return 0;
}

int osd_recover_start(uv_loop_t *loop, const struct osd_recover_opts *opts,
		      struct osd_recover **out)
{
	if (!opts || !opts->n_meta || !opts->metrics)
		return -EINVAL;
	struct osd_recover *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->o = *opts;
	r->o.meta = NULL;
	r->osd_id = opts->osd_id;
	if (!r->o.max_pgs)
		r->o.max_pgs = 2;
	if (!r->o.stripes_inflight)
		r->o.stripes_inflight = 4;
	if (r->o.stripes_inflight > MAX_JOBS)
		r->o.stripes_inflight = MAX_JOBS;
	if (!r->o.report_ms)
		r->o.report_ms = 2000;
	if (!r->o.rescan_ms)
		r->o.rescan_ms = 3600ull * 1000;
	if (!r->o.rpc_timeout_ms)
		r->o.rpc_timeout_ms = 10000;
	r->st.rate_bytes = r->o.rate_bytes;
	snprintf(r->id_label, sizeof(r->id_label), "%u", r->osd_id);
	int rc = make_metrics(r);
	if (rc)
		goto fail_free;
	rc = -ENOMEM;
	r->scans = calloc(r->o.max_pgs, sizeof(*r->scans));
	if (!r->scans)
		goto fail_free;
	struct meta_client_opts mo = { .members = opts->meta, .n_members = opts->n_meta,
				       .attempt_timeout_ms = 3000, .retry_for_ms = 5000,
				       .max_calls = 16 };
	rc = meta_client_new(loop, &mo, &r->mc);
	if (rc)
		goto fail_scans;
	char name[24];
	snprintf(name, sizeof(name), "osd.%u", r->osd_id);
	struct meta_mapwatch_opts wo = { .members = opts->meta, .n_members = opts->n_meta,
					 .on_change = on_map, .arg = r, .log_name = name };
	rc = meta_mapwatch_start(loop, &wo, &r->mw);
	if (rc)
		goto fail_mc;
	uv_timer_init(loop, &r->tick);
	uv_timer_init(loop, &r->wake);
	uv_timer_init(loop, &r->kick);
	r->tick.data = r->wake.data = r->kick.data = r;
	r->tokens_ms = loop_now_ms();
	uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
	LOG_INFO("recovery driver started", "osd=%u rate=%" PRIu64 " max_pgs=%u report_ms=%u "
		 "rescan_ms=%" PRIu64, r->osd_id, r->o.rate_bytes, r->o.max_pgs, r->o.report_ms,
		 r->o.rescan_ms);
	*out = r;
	return 0;

fail_mc:
	meta_client_close(r->mc);
fail_scans:
	free(r->scans);
fail_free:
	free(r);
	return rc;
}

void osd_recover_stats(const struct osd_recover *r, struct osd_recover_stats *out)
{
	*out = r->st;
}

static void hook_bad(void *arg, uint32_t pg)
{
	osd_recover_flag_pg(arg, pg);
}

static void hook_status(void *arg, struct osd_service_recovery *o)
{
	const struct osd_recover *r = arg;
	o->rate = r->st.rate_bytes;
	o->bytes = r->st.bytes;
	o->stripes = r->st.stripes;
	o->errors = r->st.errors;
	o->bytes_missing = r->st.bytes_missing;
	o->unfound = r->st.unfound;
	o->scans = r->st.scans;
	o->pgs_primary = r->st.pgs_primary;
	o->pgs_active = r->st.pgs_active;
	o->pgs_queued = r->st.pgs_queued;
}

void osd_recover_hooks(struct osd_recover *r, struct osd_service_hooks *out)
{
	out->bad_pg = hook_bad;
	out->status = hook_status;
	out->arg = r;
}

static void on_closed(uv_handle_t *h)
{
	struct osd_recover *r = h->data;
	if (--r->handles)
		return;
	void (*cb)(void *) = r->done_cb;
	void *arg = r->done_arg;
	ec_free(r->ec);
	free(r->pgs);
	free(r->scans);
	free(r);
	if (cb)
		cb(arg);
}

static void close_handles(struct osd_recover *r)
{
	if (r->closing_handles)
		return;
	r->closing_handles = true;
	r->handles = 3;
	uv_close((uv_handle_t *)&r->tick, on_closed);
	uv_close((uv_handle_t *)&r->wake, on_closed);
	uv_close((uv_handle_t *)&r->kick, on_closed);
}

void osd_recover_stop(struct osd_recover *r, void (*done_cb)(void *arg), void *arg)
{
	r->stopping = true;
	r->done_cb = done_cb;
	r->done_arg = arg;
	uv_timer_stop(&r->tick);
	uv_timer_stop(&r->wake);
	uv_timer_stop(&r->kick);
	/* Jobs waiting for tokens end now. The map watch closes our OSD
	 * channels a loop turn later, which fails every call still in
	 * flight (CANCELLED) and so ends every scan; the last one to end
	 * closes the handles, whose callbacks free r. */
	while (r->wait_head) {
		struct job *j = r->wait_head;
		r->wait_head = j->next_wait;
		j->waiting = false;
		job_end(j);
	}
	r->wait_tail = NULL;
	meta_mapwatch_close(r->mw);
	r->mw = NULL;
	meta_client_close(r->mc);
	r->mc = NULL;
	if (!r->st.pgs_active)
		close_handles(r);
}
