/*
 * scrub.c — the background scrubber (contract in scrub.h).
 *
 * Owns: the walk (a small buffer of the next shard keys, refilled by a
 * RocksDB iterator seek past the last key handed out), the lanes (one
 * shard each, one read or one record commit in flight each), the token
 * bucket, one timer (next refill or next pass), the cursor record and a
 * loop_queue that kv completions of its own commits arrive on.
 *
 * Invariants:
 *  - Shards are handed to lanes in key order; the saved cursor is the key
 *    before the oldest shard still in a lane, so every shard at or before
 *    it was finished in this pass (a restart re-reads at most `lanes`).
 *  - A bad-shard record is committed only when no put or delete of the
 *    shard is in its commit stage and the committed record is still the
 *    one read; store_note_bad precedes the commit, so any later mutation of
 *    the shard deletes the record in its own (later) batch.
 * Thread: the store's loop.
 */
#include "osd/store/scrub.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/loop.h"
#include "osd/store/kv.h"

#define CURSOR_KEY "\x01scrub"
#define CURSOR_VERSION 1
#define CURSOR_HDR 20
#define BAD_VERSION 1
#define WALK_BATCH 64
#define MAX_LANES 8
#define MIN_COST 4096       /* bytes charged for a read, however short */
#define BURST_MS 100        /* tokens saved up at most: this much time's worth */
#define RETRY_MS 20         /* store busy: try again after */

struct walk_ent {
	uint8_t k[STORE_KEY_LEN];
	uint64_t length;
};

struct lane {
	struct store_scrub *sc;
	struct store_get_req get;
	struct store_kv_req kreq;      /* a bad-shard record's commit */
	rocksdb_writebatch_t *wb;
	bool busy;                     /* holds a shard */
	bool reading, marking;         /* a get / a record commit in flight */
	struct store_key key;
	uint64_t length, off;          /* shard length (as last seen), next byte */
	uint64_t seq;                  /* hand-out order */
	uint8_t prev[STORE_KEY_LEN];   /* the key handed out before this one */
	bool prev_set;
};

struct store_scrub {
	uv_loop_t *loop;
	struct store *s;
	struct store_kv *kv;
	struct store_scrub_opts o;
	uint32_t chunk;
	uv_timer_t timer;
	struct loop_queue q;
	struct lane lanes[MAX_LANES];

	/* the walk */
	struct walk_ent walk[WALK_BATCH];
	size_t wn, wi;
	bool walk_end;                 /* the iterator found no shard after last */
	uint8_t last[STORE_KEY_LEN];   /* last key handed out (or resumed after) */
	bool last_set;
	uint64_t seq;

	/* pacing */
	double tokens;
	uint64_t refill_ms;
	bool idle;                     /* between passes */
	uint64_t next_pass_ms;         /* on the opts clock */
	uint64_t end_unix_s;           /* when the last pass ended */

	/* cursor saves */
	struct store_kv_req pkreq;
	rocksdb_writebatch_t *pwb;
	bool persisting, persist_again, final_saved;
	uint32_t since_persist;

	bool stopping;
	void (*stop_cb)(void *arg);
	void *stop_arg;

	struct store_scrub_stats st;
};

static void pump(struct store_scrub *sc);
static void maybe_stopped(struct store_scrub *sc);
static void persist(struct store_scrub *sc);

static uint64_t now_ms(struct store_scrub *sc)
{
	return sc->o.now_ms ? sc->o.now_ms(sc->o.now_arg) : loop_now_ms();
}

static void put_u64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint32_t key_pg(const uint8_t *k)
{
	uint32_t be;
	memcpy(&be, k + 1, 4);
	return be32toh(be);
}

const char *store_bad_kind_name(uint8_t kind)
{
	switch (kind) {
	case STORE_BAD_CHECKSUM: return "checksum";
	case STORE_BAD_READ: return "read_error";
	case STORE_BAD_INDEX: return "index";
	default: return "unknown";
	}
}

/* ------------------------------------------------------------ cursor */

/* The key before the oldest shard still in a lane (see the top). */
static bool cursor_key(const struct store_scrub *sc, const uint8_t **k)
{
	const struct lane *old = NULL;
	for (uint32_t i = 0; i < sc->o.lanes; i++) {
		const struct lane *l = &sc->lanes[i];
		if (l->busy && (!old || l->seq < old->seq))
			old = l;
	}
	if (old) {
		*k = old->prev;
		return old->prev_set;
	}
	*k = sc->last;
	return sc->last_set;
}

static void on_persisted(struct store_kv_req *kreq, int status)
{
	struct store_scrub *sc = container_of(kreq, struct store_scrub, pkreq);
	(void)status; /* a lost save costs a re-read after a restart, no more */
	rocksdb_writebatch_destroy(sc->pwb);
	sc->pwb = NULL;
	sc->persisting = false;
	if (sc->stopping) {
		maybe_stopped(sc);
	} else if (sc->persist_again) {
		sc->persist_again = false;
		persist(sc);
	}
}

/* Save the cursor (one commit in flight; a request meanwhile saves again
 * after it). */
static void persist(struct store_scrub *sc)
{
	if (sc->persisting) {
		sc->persist_again = true;
		return;
	}
	sc->since_persist = 0;
	uint8_t v[CURSOR_HDR + STORE_KEY_LEN];
	const uint8_t *k;
	bool have = !sc->idle && cursor_key(sc, &k);
	memset(v, 0, sizeof(v));
	v[0] = CURSOR_VERSION;
	v[1] = sc->idle ? 1 : 0;
	v[2] = have ? STORE_KEY_LEN : 0;
	put_u64(v + 4, sc->st.passes);
	put_u64(v + 12, sc->end_unix_s);
	if (have)
		memcpy(v + CURSOR_HDR, k, STORE_KEY_LEN);
	sc->pwb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(sc->pwb, CURSOR_KEY, sizeof(CURSOR_KEY) - 1, (const char *)v,
			       CURSOR_HDR + (have ? STORE_KEY_LEN : 0));
	if (store_kv_commit(sc->kv, &sc->pkreq, sc->pwb, &sc->q, on_persisted) != 0) {
		rocksdb_writebatch_destroy(sc->pwb);
		sc->pwb = NULL;
		return;
	}
	sc->persisting = true;
}

static int load_cursor(struct store_scrub *sc)
{
	char *v;
	size_t vlen;
	int rc = store_kv_get(sc->kv, CURSOR_KEY, sizeof(CURSOR_KEY) - 1, &v, &vlen);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	const uint8_t *p = (const uint8_t *)v;
	/* An unknown or short record restarts the pass: scrubbing is
	 * idempotent, so that costs time, never correctness. */
	if (vlen >= CURSOR_HDR && p[0] == CURSOR_VERSION) {
		sc->st.passes = get_u64(p + 4);
		sc->end_unix_s = get_u64(p + 12);
		if (p[1] == 1) {
			uint64_t wall = (uint64_t)time(NULL);
			uint64_t gone_ms = wall > sc->end_unix_s ? (wall - sc->end_unix_s) * 1000 : 0;
			sc->idle = true;
			sc->next_pass_ms = now_ms(sc) +
					   (gone_ms < sc->o.interval_ms ? sc->o.interval_ms - gone_ms : 0);
		} else if (p[2] == STORE_KEY_LEN && vlen >= CURSOR_HDR + STORE_KEY_LEN) {
			memcpy(sc->last, p + CURSOR_HDR, STORE_KEY_LEN);
			sc->last_set = true;
			sc->st.position_pg = key_pg(sc->last);
		}
	}
	free(v);
	return 0;
}

/* ------------------------------------------------------------ walk */

static int walk_fill(struct store_scrub *sc)
{
	sc->wn = sc->wi = 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(sc->kv), store_kv_ropts(sc->kv));
	if (sc->last_set) {
		rocksdb_iter_seek(it, (const char *)sc->last, STORE_KEY_LEN);
	} else {
		char ns = STORE_KEY_NS;
		rocksdb_iter_seek(it, &ns, 1);
	}
	for (; rocksdb_iter_valid(it) && sc->wn < WALK_BATCH; rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < 1 || k[0] != STORE_KEY_NS)
			break;
		if (kl != STORE_KEY_LEN)
			continue; /* not a shard key: nothing a get could name */
		if (sc->last_set && memcmp(k, sc->last, STORE_KEY_LEN) == 0)
			continue;
		struct walk_ent *e = &sc->walk[sc->wn++];
		memcpy(e->k, k, STORE_KEY_LEN);
		struct store_rec r;
		const char *v = rocksdb_iter_value(it, &vl);
		/* Undecodable: length 0; the get reports it as an index error. */
		e->length = store_rec_decode(v, vl, &r) == 0 ? r.length : 0;
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		free(err);
		return -EIO;
	}
	if (sc->wn == 0)
		sc->walk_end = true;
	return 0;
}

/* Hand the next shard of the pass to l; false at the pass's end (or on an
 * index read error, which ends the pass early: the next one retries). */
static bool take_shard(struct store_scrub *sc, struct lane *l)
{
	while (sc->wi == sc->wn) {
		if (sc->walk_end)
			return false;
		if (walk_fill(sc) != 0) {
			sc->walk_end = true;
			return false;
		}
	}
	struct walk_ent *e = &sc->walk[sc->wi++];
	memcpy(l->prev, sc->last, STORE_KEY_LEN);
	l->prev_set = sc->last_set;
	memcpy(sc->last, e->k, STORE_KEY_LEN);
	sc->last_set = true;
	l->seq = ++sc->seq;
	l->busy = true;
	l->length = e->length;
	l->off = 0;
	if (store_key_decode(e->k, STORE_KEY_LEN, &l->key) != 0)
		memset(&l->key, 0, sizeof(l->key)); /* oid_len 0: the get says -EINVAL */
	sc->st.position_pg = key_pg(e->k);
	return true;
}

static void shard_done(struct store_scrub *sc, struct lane *l)
{
	l->busy = false;
	sc->st.shards++;
	if (++sc->since_persist >= sc->o.persist_every)
		persist(sc);
}

static void start_pass(struct store_scrub *sc)
{
	sc->idle = false;
	sc->last_set = false;
	sc->walk_end = false;
	sc->wn = sc->wi = 0;
	sc->st.position_pg = 0;
}

static void end_pass(struct store_scrub *sc)
{
	sc->idle = true;
	sc->st.passes++;
	sc->end_unix_s = (uint64_t)time(NULL);
	sc->next_pass_ms = now_ms(sc) + sc->o.interval_ms;
	persist(sc);
}

/* ------------------------------------------------------------ bad shards */

static bool same_stat(const struct store_stat *a, const struct store_stat *b)
{
	return a->length == b->length && a->crc == b->crc && a->is_inline == b->is_inline &&
	       a->block == b->block && a->blocks == b->blocks;
}

static void on_marked(struct store_kv_req *kreq, int status)
{
	struct lane *l = container_of(kreq, struct lane, kreq);
	struct store_scrub *sc = l->sc;
	(void)status; /* not recorded: the next pass finds it again */
	rocksdb_writebatch_destroy(l->wb);
	l->wb = NULL;
	l->marking = false;
	shard_done(sc, l);
	if (sc->stopping)
		maybe_stopped(sc);
	else
		pump(sc);
}

/* l's shard failed (seen: its record as read, NULL when undecodable).
 * Record it unless it changed under us or is recorded already; the shard
 * is finished now or when the record committed. */
static void found_bad(struct store_scrub *sc, struct lane *l, uint8_t kind, uint64_t from,
		      uint64_t to, const struct store_stat *seen)
{
	struct store_stat now;
	if (store_key_busy(sc->s, &l->key) ||
	    (seen && (store_stat(sc->s, &l->key, &now) != 0 || !same_stat(seen, &now)))) {
		sc->st.skipped++;
		shard_done(sc, l);
		return;
	}
	uint8_t k[STORE_KEY_LEN], bk[STORE_KEY_LEN];
	store_key_encode(&l->key, k);
	store_key_to_bad(k, bk);
	char *old;
	size_t olen;
	int rc = store_kv_get(sc->kv, bk, STORE_KEY_LEN, &old, &olen);
	if (rc != IOL_ENOT_FOUND) {
		if (rc == 0)
			free(old); /* recorded (and reported) already */
		shard_done(sc, l);
		return;
	}
	struct store_bad b = { .key = l->key, .kind = kind, .found_unix_s = (uint64_t)time(NULL),
			       .from = from, .to = to, .length = seen ? seen->length : 0 };
	uint8_t v[STORE_BAD_VAL_LEN] = { BAD_VERSION, kind };
	put_u64(v + 8, b.found_unix_s);
	put_u64(v + 16, from);
	put_u64(v + 24, to);
	put_u64(v + 32, b.length);
	store_note_bad(sc->s);
	l->wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(l->wb, (const char *)bk, STORE_KEY_LEN, (const char *)v, sizeof(v));
	if (store_kv_commit(sc->kv, &l->kreq, l->wb, &sc->q, on_marked) != 0) {
		rocksdb_writebatch_destroy(l->wb);
		l->wb = NULL;
		shard_done(sc, l);
		return;
	}
	l->marking = true;
	sc->st.errors++;
	if (sc->o.on_bad)
		sc->o.on_bad(sc->o.on_bad_arg, &b);
}

/* ------------------------------------------------------------ reads */

static void on_read(struct store_get_req *req, int status)
{
	struct lane *l = req->data;
	struct store_scrub *sc = l->sc;
	l->reading = false;
	if (status == 0) {
		sc->st.bytes += req->out.len;
		buf_unref(req->out.buf);
		/* The committed length now: a shard rewritten since the walk
		 * is read to its current end (the next read asks for > 0
		 * bytes, so this ends). */
		l->length = req->stat.length;
		l->off += req->out.len;
		if (l->off >= l->length)
			shard_done(sc, l);
	} else if (status == IOL_ECHECKSUM) {
		found_bad(sc, l, STORE_BAD_CHECKSUM, req->err_from, req->err_to, &req->stat);
	} else if (status == IOL_ESHUTDOWN) {
		l->busy = false; /* not done: the saved cursor still precedes it */
	} else {
		uint64_t end = l->off + sc->chunk;
		if (end > req->stat.length)
			end = req->stat.length;
		found_bad(sc, l, STORE_BAD_READ, l->off, end ? end - 1 : 0, &req->stat);
	}
	if (sc->stopping)
		maybe_stopped(sc);
	else
		pump(sc);
}

static void on_timer(uv_timer_t *t)
{
	pump(t->data);
}

static void arm(struct store_scrub *sc, uint64_t ms)
{
	uv_timer_start(&sc->timer, on_timer, ms, 0);
}

/* Issue l's next read. false: stop pumping (store busy or closing). */
static bool issue(struct store_scrub *sc, struct lane *l)
{
	uint64_t left = l->length > l->off ? l->length - l->off : 0;
	uint64_t len = left < sc->chunk ? left : sc->chunk;
	double cost = len > MIN_COST ? (double)len : MIN_COST;
	l->get.data = l;
	int rc = store_get(sc->s, &l->get, &l->key, l->off, len, on_read);
	switch (rc) {
	case 0:
		l->reading = true;
		sc->tokens -= cost;
		sc->st.reads++;
		return true;
	case -EAGAIN:
	case -ENOMEM:
		arm(sc, RETRY_MS);
		return false;
	case IOL_ESHUTDOWN:
		l->busy = false;
		return false;
	case IOL_ECORRUPT:
		sc->tokens -= MIN_COST;
		found_bad(sc, l, STORE_BAD_INDEX, 0, 0, NULL);
		return true;
	default: /* gone (NOT_FOUND), shrunk under us (-EINVAL), newer format */
		sc->tokens -= MIN_COST;
		sc->st.skipped++;
		shard_done(sc, l);
		return true;
	}
}

static void refill(struct store_scrub *sc, uint64_t now)
{
	if (now > sc->refill_ms) {
		sc->tokens += (double)sc->o.rate_bytes * (double)(now - sc->refill_ms) / 1000.0;
		double cap = (double)sc->o.rate_bytes * BURST_MS / 1000.0;
		if (sc->tokens > cap)
			sc->tokens = cap;
	}
	sc->refill_ms = now;
}

static void pump(struct store_scrub *sc)
{
	if (sc->stopping)
		return;
	uint64_t now = now_ms(sc);
	refill(sc, now);
	if (sc->idle) {
		if (now < sc->next_pass_ms) {
			arm(sc, sc->next_pass_ms - now);
			return;
		}
		start_pass(sc);
	}
	/* Lanes holding a shard first, then free lanes take new ones: a lane
	 * must not hold a shard while others take the tokens (the cursor
	 * could not move past it). */
	for (int phase = 0; phase < 2; phase++) {
		for (uint32_t i = 0; i < sc->o.lanes; i++) {
			struct lane *l = &sc->lanes[i];
			if (l->busy != (phase == 0))
				continue;
			while (!l->reading && !l->marking) {
				if (sc->tokens < 0) {
					double wait = -sc->tokens * 1000.0 / (double)sc->o.rate_bytes;
					arm(sc, (uint64_t)wait + 1);
					return;
				}
				if (!l->busy && !take_shard(sc, l))
					break;
				if (!issue(sc, l))
					return;
			}
		}
	}
	bool any_busy = false;
	for (uint32_t i = 0; i < sc->o.lanes; i++)
		any_busy |= sc->lanes[i].busy;
	if (!any_busy && sc->walk_end && sc->wi == sc->wn) {
		end_pass(sc);
		arm(sc, sc->o.interval_ms);
	}
}

/* ------------------------------------------------------------ lifecycle */

int store_scrub_start(uv_loop_t *loop, struct store *s, const struct store_scrub_opts *o,
		      struct store_scrub **out)
{
	if (o->rate_bytes == 0 || o->lanes > MAX_LANES)
		return -EINVAL;
	struct store_scrub *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	sc->loop = loop;
	sc->s = s;
	sc->kv = store_kv_of(s);
	sc->o = *o;
	if (!sc->o.lanes)
		sc->o.lanes = 2;
	if (!sc->o.persist_every)
		sc->o.persist_every = 1024;
	uint32_t chunk = o->chunk_bytes ? o->chunk_bytes : 1u << 20;
	sc->chunk = (chunk + STORE_CRC_BLOCK - 1) & ~(STORE_CRC_BLOCK - 1);
	for (uint32_t i = 0; i < MAX_LANES; i++)
		sc->lanes[i].sc = sc;
	sc->refill_ms = now_ms(sc);
	int rc = load_cursor(sc);
	if (rc)
		goto out_free;
	rc = loop_queue_init(&sc->q, loop);
	if (rc)
		goto out_free;
	/* uv_timer_init cannot fail once the loop is up (libuv 1.44 always
	 * returns 0); the queue above could. */
	uv_timer_init(loop, &sc->timer);
	sc->timer.data = sc;
	arm(sc, 0);
	*out = sc;
	return 0;

out_free:
	free(sc);
	return rc;
}

void store_scrub_kick(struct store_scrub *sc)
{
	if (!sc->stopping)
		arm(sc, 0);
}

static void on_queue_closed(struct loop_queue *q)
{
	struct store_scrub *sc = container_of(q, struct store_scrub, q);
	void (*cb)(void *) = sc->stop_cb;
	void *arg = sc->stop_arg;
	free(sc);
	if (cb)
		cb(arg);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct store_scrub *sc = h->data;
	loop_queue_close(&sc->q, on_queue_closed);
}

static void maybe_stopped(struct store_scrub *sc)
{
	for (uint32_t i = 0; i < sc->o.lanes; i++)
		if (sc->lanes[i].reading || sc->lanes[i].marking)
			return;
	if (sc->persisting)
		return;
	if (!sc->final_saved) {
		sc->final_saved = true;
		persist(sc);
		if (sc->persisting)
			return;
	}
	if (uv_is_closing((uv_handle_t *)&sc->timer))
		return;
	uv_close((uv_handle_t *)&sc->timer, on_timer_closed);
}

void store_scrub_stop(struct store_scrub *sc, void (*done_cb)(void *arg), void *arg)
{
	sc->stopping = true;
	sc->stop_cb = done_cb;
	sc->stop_arg = arg;
	uv_timer_stop(&sc->timer);
	maybe_stopped(sc);
}

void store_scrub_stats(const struct store_scrub *sc, struct store_scrub_stats *out)
{
	*out = sc->st;
	out->idle = sc->idle;
	out->last_pass_end_unix_s = sc->end_unix_s;
	out->inflight = 0;
	for (uint32_t i = 0; i < sc->o.lanes; i++)
		out->inflight += sc->lanes[i].reading + sc->lanes[i].marking;
}

/* ------------------------------------------------------------ listing */

static int bad_decode(const char *k, size_t kl, const char *v, size_t vl, struct store_bad *b)
{
	uint8_t sk[STORE_KEY_LEN];
	if (kl != STORE_KEY_LEN || vl < STORE_BAD_VAL_LEN)
		return IOL_ECORRUPT;
	memcpy(sk, k, STORE_KEY_LEN);
	sk[0] = STORE_KEY_NS;
	memset(b, 0, sizeof(*b));
	int rc = store_key_decode(sk, STORE_KEY_LEN, &b->key);
	if (rc)
		return rc;
	const uint8_t *p = (const uint8_t *)v;
	b->kind = p[1];
	b->found_unix_s = get_u64(p + 8);
	b->from = get_u64(p + 16);
	b->to = get_u64(p + 24);
	b->length = get_u64(p + 32);
	return 0;
}

int store_scrub_list_bad(struct store *s, const struct store_key *after, struct store_bad *out,
			 size_t max, bool *more)
{
	struct store_kv *kv = store_kv_of(s);
	uint8_t start[STORE_KEY_LEN];
	size_t start_len = 1;
	start[0] = STORE_BAD_NS;
	if (after) {
		uint8_t k[STORE_KEY_LEN];
		store_key_encode(after, k);
		store_key_to_bad(k, start);
		start_len = STORE_KEY_LEN;
	}
	*more = false;
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(kv), store_kv_ropts(kv));
	rocksdb_iter_seek(it, (const char *)start, start_len);
	size_t n = 0;
	for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < 1 || k[0] != STORE_BAD_NS)
			break;
		if (after && kl == STORE_KEY_LEN && memcmp(k, start, STORE_KEY_LEN) == 0)
			continue;
		const char *v = rocksdb_iter_value(it, &vl);
		struct store_bad b;
		if (bad_decode(k, kl, v, vl, &b) != 0)
			continue; /* not ours to judge: skip what we cannot read */
		if (n == max) {
			*more = true;
			break;
		}
		out[n++] = b;
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		free(err);
		return -EIO;
	}
	return (int)n;
}
