/*
 * test_store_powercut.c — power cuts through the fault seam
 * (tests/lib/fault_io.h), then a restart on what is left.
 *
 * Each round (one seed) opens a new store on a sparse file in /dev/shm
 * through the seam, with a commit log of 64 KiB, 256 KiB or 1 MiB (so it
 * wraps, checkpoints RocksDB and, at 64 KiB, sends the largest inline
 * shards through RocksDB's synced WAL), and runs a random workload on
 * KEYS keys: puts of 0 B to 3 MiB (inline and extent), overwrites,
 * deletes and gets, up to DEPTH in flight on the loop, one at a time per
 * key. Twice per round the seam cuts the power at a random write, flush
 * or RocksDB sync point, dropping or keeping (per 4 KiB sector, torn and
 * reordered) every write not yet flushed; the store is closed with the
 * seam dead (nothing it does after the cut reaches the files, and RocksDB
 * is put back to its last durable state: kv's last sync point, or a
 * memtable flush of RocksDB's own the test makes now and then), then
 * reopened on what is left (sometimes with another cut during that
 * open). After each restart:
 *  - every acknowledged put reads back byte for byte, every acknowledged
 *    delete stays deleted (a status-0 callback after the cut counts as
 *    acknowledged: the seam failed everything after it, so the store
 *    only says 0 for what it flushed before);
 *  - a key whose last operation failed at the cut shows either the state
 *    before it or the state it was writing, whole (never other bytes);
 *  - the listing names no other shard, space accounting matches the
 *    shards there (nothing reserved, no leak), and the store keeps
 *    working: the next phase runs on it, the last one ends with a clean
 *    close (a third of the time with a cut inside it), a reopen that
 *    replays nothing after a clean one, and one more check.
 * A quarter of the rounds also cut the power while the store is first
 * created (format: file, commit log, RocksDB, identity, superblock). A
 * third of the phases also inject one error before the cut: a device
 * read, write or fsync (ENODATA: the put fails and the old shard must
 * stay, exactly), or a commit-log write or flush or a RocksDB sync point
 * (the store then refuses mutations; the test cuts the power and
 * restarts it; the operations that failed may or may not have taken
 * effect).
 * The "seam" case checks the simulation itself first: what a cut keeps
 * and drops, and that a device fsync covers only writes completed before
 * it was submitted.
 *
 * POWERCUT_SEED=N runs round N alone (rounds use seeds base, base+1...;
 * each failure names its seed), POWERCUT_ROUNDS=N sets the count (50;
 * make soak-powercut runs 1,000). A seed fixes the workload, the cut
 * points and the tears; the commit threads' timing is not fixed, so a
 * replay may interleave differently.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "tests/lib/fault_io.h"
#include "tests/lib/scratch.h"

#define KEYS 40
#define PGS 4
#define DEPTH 12
#define DEV_SIZE (512ull << 20)
#define PHASE_OPS 120          /* operations per phase, at least */
#define MAX_LEN (3u << 20)

static char dev[128], meta[128], snap[128];
static uint64_t cur_seed;

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			char m_[1024];                                                    \
			snprintf(m_, sizeof(m_), __VA_ARGS__);                            \
			ck_abort_msg("seed %llu (POWERCUT_SEED=%llu replays it): %s",      \
				     (unsigned long long)cur_seed,                        \
				     (unsigned long long)cur_seed, m_);                   \
		}                                                                         \
	} while (0)

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	unlink(dev);
	rm_tree(meta);
	rm_tree(snap);
}

static void setup_once(void)
{
	test_scratch_path(dev, sizeof(dev), "iolake-test-powercut-%d.dev", (int)getpid());
	test_scratch_path(meta, sizeof(meta), "iolake-test-powercut-%d.meta", (int)getpid());
	test_scratch_path(snap, sizeof(snap), "iolake-test-powercut-%d.snap", (int)getpid());
	cleanup();
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Shard bytes: a function of (round seed, key, generation). */
static void fill(uint8_t *p, size_t len, uint64_t seed, uint32_t key, uint32_t gen)
{
	uint64_t x = seed * 0x100000001b3ull ^ ((uint64_t)key << 32 | gen) ^ 0x2545f4914f6cdd1dull;
	x |= 1;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

/* ------------------------------------------------------------ the model */

struct ver {
	bool exists;
	uint32_t gen;
	uint32_t len;
};

struct key {
	uint32_t idx;
	struct store_key k;
	struct ver acked;      /* after the last acknowledged operation */
	bool uncertain;        /* the last one failed at the cut: maybe cand */
	struct ver cand;
	bool busy;
	uint32_t next_gen;
	uint32_t lens[512];    /* length of each generation (for messages) */
};

struct stats {
	uint64_t puts, dels, gets, failed, cand_seen, cand_lost, replayed, reopens, bg_flushes;
	uint64_t injected, dev_failed;
};

struct world {
	uv_loop_t loop;
	struct store *s;
	struct fault_io *fi;
	struct store_opts o;
	uint64_t seed, rng;
	struct key keys[KEYS];
	int inflight;
	int issued;
	int max_ops;           /* stop issuing after this many (cut or not) */
	int inject;            /* this phase fails one call of this kind (-1: none) */
	bool store_failed;     /* an injected commit-log or RocksDB-sync error:
	                        * the store refuses mutations until restarted */
	struct stats st;
};

enum { OP_PUT, OP_DEL, OP_GET };

struct op {
	union {
		struct store_put_req put;
		struct store_get_req get;
		struct store_del_req del;
	} r;
	struct world *w;
	struct key *k;
	int kind;
	struct ver next;       /* the key's state if it takes effect */
};

static uint32_t pick_len(struct world *w)
{
	uint64_t r = rnd(&w->rng) % 100;
	uint32_t imax = w->o.inline_max_bytes ? w->o.inline_max_bytes : 64u << 10;
	if (r < 10)
		return 0;
	if (r < 45)
		return 1 + (uint32_t)(rnd(&w->rng) % imax);
	if (r < 80)
		return imax + 1 + (uint32_t)(rnd(&w->rng) % (256u << 10));
	if (r < 95)
		return (256u << 10) + (uint32_t)(rnd(&w->rng) % (768u << 10));
	return (1u << 20) + (uint32_t)(rnd(&w->rng) % (MAX_LEN - (1u << 20)));
}

static void issue(struct world *w);

static void op_done(struct op *op, int status)
{
	struct world *w = op->w;
	struct key *k = op->k;
	w->inflight--;
	k->busy = false;
	if (status == 0) {
		if (op->kind != OP_GET)
			k->acked = op->next;
		if (op->kind == OP_PUT)
			w->st.puts++;
		else if (op->kind == OP_DEL)
			w->st.dels++;
	} else if (status == -ENODATA) {
		/* The injected device error: the put never reached the index,
		 * the old shard stays (the model does not change). */
		CHECK(w->inject >= FAULT_IO_DEV_READ && w->inject <= FAULT_IO_DEV_FSYNC,
		      "key %u: operation %d failed with ENODATA, not injected", k->idx, op->kind);
		w->st.dev_failed++;
	} else {
		/* Only the cut, or an injected commit-log or RocksDB error,
		 * fails anything here; either may have let it take effect. */
		bool kv_fault = w->inject == FAULT_IO_PWRITE || w->inject == FAULT_IO_FDATASYNC ||
				w->inject == FAULT_IO_KV_DURABLE;
		CHECK(fault_io_is_cut(w->fi) || (kv_fault && status == -EIO),
		      "key %u: operation %d failed with %s before any cut", k->idx, op->kind,
		      iol_strerror(status));
		if (!fault_io_is_cut(w->fi))
			w->store_failed = true;
		w->st.failed++;
		if (op->kind != OP_GET) {
			k->uncertain = true;
			k->cand = op->next;
		}
	}
	free(op);
	issue(w);
}

static void on_put(struct store_put_req *req, int status)
{
	op_done(req->data, status);
}

static void on_del(struct store_del_req *req, int status)
{
	op_done(req->data, status);
}

static void on_get(struct store_get_req *req, int status)
{
	struct op *op = req->data;
	struct world *w = op->w;
	struct key *k = op->k;
	if (status == 0) {
		w->st.gets++;
		CHECK(k->acked.exists && req->out.len == k->acked.len,
		      "get of key %u: %zu bytes, model says %s %u bytes", k->idx, req->out.len,
		      k->acked.exists ? "present" : "absent", k->acked.len);
		uint8_t *want = malloc(k->acked.len + 1);
		fill(want, k->acked.len, w->seed, k->idx, k->acked.gen);
		CHECK(k->acked.len == 0 || memcmp(buf_slice_data(&req->out), want, k->acked.len) == 0,
		      "get of key %u (gen %u, %u bytes): other bytes", k->idx, k->acked.gen,
		      k->acked.len);
		free(want);
		buf_unref(req->out.buf);
	}
	op_done(op, status);
}

/* RocksDB flushes its memtable on its own now and then: a cut may leave
 * it ahead of what kv made durable (the seam is told, or it would restore
 * only kv's last sync point). */
static void background_flush(struct world *w)
{
	rocksdb_t *db = store_kv_db(store_kv_of(w->s));
	char *err = NULL;
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_flush(db, fo, &err);
	rocksdb_flushoptions_destroy(fo);
	if (err)
		free(err);
	else if (fault_io_kv_flushed(w->fi, db, meta) == 0)
		w->st.bg_flushes++;
}

/* One operation on a random idle key. false when none could start. */
static bool start_one(struct world *w)
{
	if (rnd(&w->rng) % 50 == 0)
		background_flush(w);
	struct key *k = NULL;
	for (int tries = 0; tries < 8 && !k; tries++) {
		struct key *c = &w->keys[rnd(&w->rng) % KEYS];
		if (!c->busy)
			k = c;
	}
	if (!k)
		return false;
	struct op *op = calloc(1, sizeof(*op));
	op->w = w;
	op->k = k;
	uint64_t r = rnd(&w->rng) % 100;
	op->kind = !k->acked.exists || r < 55 ? OP_PUT : r < 75 ? OP_DEL : OP_GET;
	int rc;
	switch (op->kind) {
	case OP_PUT: {
		uint32_t len = pick_len(w);
		op->next = (struct ver){ true, ++k->next_gen, len };
		k->lens[op->next.gen % 512] = len;
		struct buf *b = len ? buf_new(len) : NULL;
		if (b) {
			fill(b->data, len, w->seed, k->idx, op->next.gen);
			b->len = len;
		}
		op->r.put.data = op;
		rc = store_put(w->s, &op->r.put, &k->k, (struct buf_slice){ b, 0, len }, on_put);
		buf_unref(b);
		break;
	}
	case OP_DEL:
		op->next = (struct ver){ false, 0, 0 };
		op->r.del.data = op;
		rc = store_delete(w->s, &op->r.del, &k->k, on_del);
		break;
	default:
		op->r.get.data = op;
		rc = store_get(w->s, &op->r.get, &k->k, 0, UINT64_MAX, on_get);
		break;
	}
	if (rc) {
		/* Refused now: nothing happened (the store refuses mutations
		 * once an index write failed: after a cut or an injected
		 * commit-log error). */
		CHECK(fault_io_is_cut(w->fi) || (w->store_failed && rc == -EIO),
		      "key %u: operation %d refused: %s", k->idx, op->kind, iol_strerror(rc));
		if (!fault_io_is_cut(w->fi))
			w->store_failed = true;
		free(op);
		return false;
	}
	k->busy = true;
	w->inflight++;
	w->issued++;
	return true;
}

static void issue(struct world *w)
{
	while (w->inflight < DEPTH && w->issued < w->max_ops && !w->store_failed &&
	       !fault_io_is_cut(w->fi))
		if (!start_one(w))
			break;
}

/* Run a phase until nothing is in flight and (if armed) the cut came.
 * A third of the cut phases also fail one device, commit-log or RocksDB
 * sync call first (if it comes before the cut). */
static void run_phase(struct world *w, int ops, bool cut, uint32_t keep_permille)
{
	static const int kinds[] = { FAULT_IO_DEV_READ, FAULT_IO_DEV_WRITE, FAULT_IO_DEV_FSYNC,
				     FAULT_IO_PWRITE,   FAULT_IO_FDATASYNC, FAULT_IO_KV_DURABLE };
	w->issued = 0;
	w->max_ops = cut ? ops * 4 : ops;
	w->inject = -1;
	w->store_failed = false;
	if (cut) {
		/* 1..~2.5 events per operation: somewhere in the phase. */
		uint64_t at = 1 + rnd(&w->rng) % (uint64_t)(ops * 5 / 2);
		fault_io_cut_at(w->fi, at, keep_permille);
		if (rnd(&w->rng) % 3 == 0) {
			w->inject = kinds[rnd(&w->rng) % 6];
			bool on_dev = w->inject <= FAULT_IO_DEV_FSYNC;
			uint64_t nth = 1 + rnd(&w->rng) % (w->inject == FAULT_IO_KV_DURABLE ? 4 : 40);
			fault_io_fail(w->fi, (enum fault_io_call)w->inject, nth, on_dev ? ENODATA : EIO);
			w->st.injected++;
		}
	}
	issue(w);
	for (;;) {
		while (w->inflight)
			uv_run(&w->loop, UV_RUN_ONCE);
		if (!cut || fault_io_is_cut(w->fi))
			break;
		if (w->store_failed) {
			fault_io_cut(w->fi, keep_permille); /* and restart it */
			break;
		}
		if (w->issued >= w->max_ops) {
			fault_io_cut(w->fi, keep_permille); /* the armed one never came */
			break;
		}
		issue(w);
		if (!w->inflight) /* every key busy cannot be: nothing in flight */
			uv_run(&w->loop, UV_RUN_NOWAIT);
	}
	if (w->inject >= 0)
		fault_io_fail(w->fi, (enum fault_io_call)w->inject, 0, 0);
}

/* ------------------------------------------------------------ open, close, check */

static void on_closed(void *arg)
{
	*(bool *)arg = true;
}

static void close_store(struct world *w)
{
	bool closed = false;
	store_close(w->s, on_closed, &closed);
	while (!closed)
		uv_run(&w->loop, UV_RUN_ONCE);
	w->s = NULL;
}

static int open_store(struct world *w, char *err, size_t errlen)
{
	return store_open(&w->loop, &w->o, &w->s, err, errlen);
}

struct sync_get {
	struct store_get_req r;
	bool done;
	int status;
};

static void on_sync_get(struct store_get_req *req, int status)
{
	struct sync_get *g = req->data;
	g->done = true;
	g->status = status;
}

/* The whole shard, waited for. 0 with *out (the caller unrefs it), or
 * the error, with the store's message in msg. */
static int get_all(struct world *w, struct key *k, struct buf_slice *out, char *msg, size_t ml)
{
	struct sync_get g = { 0 };
	g.r.data = &g;
	int rc = store_get(w->s, &g.r, &k->k, 0, UINT64_MAX, on_sync_get);
	if (rc)
		return rc;
	while (!g.done)
		uv_run(&w->loop, UV_RUN_ONCE);
	if (g.status == 0)
		*out = g.r.out;
	else
		snprintf(msg, ml, "%s", g.r.err);
	return g.status;
}

static bool same(struct world *w, struct key *k, const struct ver *v, const struct buf_slice *b)
{
	if (!v->exists || b->len != v->len)
		return false;
	uint8_t *want = malloc(v->len + 1);
	fill(want, v->len, w->seed, k->idx, v->gen);
	bool eq = v->len == 0 || memcmp(buf_slice_data(b), want, v->len) == 0;
	free(want);
	return eq;
}

static void describe(const struct key *k, char *out, size_t n)
{
	snprintf(out, n, "acked %s gen %u len %u; last op failed: %s, it wrote %s gen %u len %u",
		 k->acked.exists ? "present" : "absent", k->acked.gen, k->acked.len,
		 k->uncertain ? "yes" : "no", k->cand.exists ? "present" : "absent", k->cand.gen,
		 k->cand.len);
}

/* After a restart: every key is in a state the model allows; the store's
 * listing and space agree with what is there. The model then takes what
 * is there (it is durable now) as acknowledged. */
static void verify(struct world *w)
{
	uint64_t ext_blocks = 0, inline_bytes = 0;
	int present = 0;
	char d[256], msg[400];
	for (int i = 0; i < KEYS; i++) {
		struct key *k = &w->keys[i];
		struct store_stat st;
		describe(k, d, sizeof(d));
		int rc = store_stat(w->s, &k->k, &st);
		CHECK(rc == 0 || rc == IOL_ENOT_FOUND, "stat of key %u: %s", k->idx,
		      iol_strerror(rc));
		struct ver got = { false, 0, 0 };
		if (rc == IOL_ENOT_FOUND) {
			CHECK(!k->acked.exists || (k->uncertain && !k->cand.exists),
			      "key %u is gone (%s)", k->idx, d);
		} else {
			present++;
			if (st.is_inline)
				inline_bytes += st.length;
			else
				ext_blocks += st.blocks;
			struct buf_slice b = { 0 };
			msg[0] = '\0';
			rc = get_all(w, k, &b, msg, sizeof(msg));
			CHECK(rc == 0, "key %u (%llu bytes, %s) does not read back: %s %s (%s)",
			      k->idx, (unsigned long long)st.length,
			      st.is_inline ? "inline" : "extent", iol_strerror(rc), msg, d);
			if (same(w, k, &k->acked, &b)) {
				got = k->acked;
			} else if (k->uncertain && same(w, k, &k->cand, &b)) {
				got = k->cand;
			} else {
				/* Name what it is, if it is any version at all. */
				uint32_t g = k->next_gen;
				for (; g > 0 && k->next_gen - g < 512; g--) {
					struct ver v = { true, g, k->lens[g % 512] };
					if (same(w, k, &v, &b))
						break;
				}
				CHECK(false, "key %u holds %zu bytes that are no version it may hold: "
				      "%s%u (%s)", k->idx, b.len, g ? "generation " : "none of its "
				      "generations, ", g, d);
			}
			buf_unref(b.buf);
		}
		if (k->uncertain) {
			bool took = got.exists == k->cand.exists && got.gen == k->cand.gen;
			if (took)
				w->st.cand_seen++;
			else
				w->st.cand_lost++;
		}
		k->acked = got;
		k->uncertain = false;
	}
	/* The listing names exactly the shards present. */
	int listed = 0;
	for (uint32_t pg = 0; pg < PGS; pg++) {
		struct store_list_ent ents[16];
		struct store_key after;
		bool more = true, first = true;
		while (more) {
			int n = store_list(w->s, pg, first ? NULL : &after, ents, 16, &more);
			CHECK(n >= 0, "list of pg %u: %s", pg, iol_strerror(n));
			for (int j = 0; j < n; j++) {
				unsigned idx = KEYS;
				char oid[STORE_OID_MAX + 1];
				memcpy(oid, ents[j].key.oid, ents[j].key.oid_len);
				oid[ents[j].key.oid_len] = '\0';
				CHECK(sscanf(oid, "k%u", &idx) == 1 && idx < KEYS && idx % PGS == pg &&
					      w->keys[idx].acked.exists,
				      "pg %u lists shard %s, which is not there", pg, oid);
				listed++;
			}
			if (n > 0)
				after = ents[n - 1].key;
			first = false;
		}
	}
	CHECK(listed == present, "listing shows %d shards, %d are there", listed, present);
	struct store_space sp;
	store_space(w->s, &sp);
	CHECK(sp.reserved_bytes == 0 && sp.used_bytes == ext_blocks * STORE_BLOCK_SIZE &&
		      sp.used_bytes + sp.free_bytes == sp.total_bytes &&
		      sp.inline_bytes == inline_bytes,
	      "space: used %llu (shards name %llu), reserved %llu, free %llu of %llu, inline %llu "
	      "(shards hold %llu)",
	      (unsigned long long)sp.used_bytes,
	      (unsigned long long)(ext_blocks * STORE_BLOCK_SIZE),
	      (unsigned long long)sp.reserved_bytes, (unsigned long long)sp.free_bytes,
	      (unsigned long long)sp.total_bytes, (unsigned long long)sp.inline_bytes,
	      (unsigned long long)inline_bytes);
}

static uint32_t pick_keep(struct world *w)
{
	uint64_t r = rnd(&w->rng) % 100;
	return r < 35 ? 0 : r < 50 ? 1000 : 1 + (uint32_t)(rnd(&w->rng) % 999);
}

/* Reopen after a cut (and the close that followed it). Sometimes the
 * power goes again during that open: then once more. */
static void restart(struct world *w)
{
	char err[512];
	CHECK(fault_io_recover(w->fi, err, sizeof(err)) == 0, "recover: %s", err);
	if (rnd(&w->rng) % 4 == 0) {
		fault_io_cut_at(w->fi, 1 + rnd(&w->rng) % 2, pick_keep(w));
		int rc = open_store(w, err, sizeof(err));
		if (rc == 0) {
			/* The open made fewer durability calls than armed. */
			fault_io_cut_at(w->fi, 0, 0);
		} else {
			CHECK(fault_io_is_cut(w->fi), "reopen failed without a cut: %s", err);
			CHECK(fault_io_recover(w->fi, err, sizeof(err)) == 0, "recover: %s", err);
		}
	}
	if (!w->s)
		CHECK(open_store(w, err, sizeof(err)) == 0, "reopen after the cut: %s", err);
	struct store_stats ss;
	store_stats(w->s, &ss);
	w->st.replayed += ss.kv.replayed;
	w->st.reopens++;
}

static void round_run(uint64_t seed, struct stats *tot)
{
	static const uint64_t clogs[] = { 64u << 10, 256u << 10, 1u << 20 };
	static const uint32_t turns[] = { 0, 2, 6 };
	char err[512];
	cur_seed = seed;
	cleanup();
	struct world *w = calloc(1, sizeof(*w));
	w->seed = seed;
	w->rng = seed;
	uv_loop_init(&w->loop);
	w->o = (struct store_opts){ .device_path = dev, .meta_dir = meta, .create_size = DEV_SIZE,
				    .create_sparse = true, .osd_id = 1 };
	w->o.cluster_id[0] = 0x42;
	w->o.commit_log_bytes = clogs[rnd(&w->rng) % 3];
	w->o.inline_max_bytes = rnd(&w->rng) % 4 == 0 ? 16u << 10 : 0;
	struct fault_io_opts fo = { .seed = rnd(&w->rng), .snap_dir = snap,
				    .dev_max_turns = turns[rnd(&w->rng) % 3],
				    .sync_delay_max_us = rnd(&w->rng) % 4 == 0 ? 200 : 0,
				    .kv_delay_max_us = rnd(&w->rng) % 2 ? 3000 : 0 };
	CHECK(fault_io_new(&fo, &w->fi) == 0, "fault_io_new");
	w->o.io = fault_io_ops(w->fi);
	for (uint32_t i = 0; i < KEYS; i++) {
		char oid[16];
		int n = snprintf(oid, sizeof(oid), "k%u", i);
		w->keys[i].idx = i;
		store_key_make(&w->keys[i].k, i % PGS, oid, (size_t)n, 0);
	}
	if (rnd(&w->rng) % 4 == 0) {
		/* The power goes while the store is being created (the file,
		 * the commit log, RocksDB, the identity record, the superblock):
		 * the next start must create or open it all the same. */
		fault_io_cut_at(w->fi, 1 + rnd(&w->rng) % 6, pick_keep(w));
		if (open_store(w, err, sizeof(err)) == 0) {
			fault_io_cut_at(w->fi, 0, 0);
		} else {
			CHECK(fault_io_is_cut(w->fi), "first open failed without a cut: %s", err);
			CHECK(fault_io_recover(w->fi, err, sizeof(err)) == 0, "recover: %s", err);
		}
	}
	if (!w->s)
		CHECK(open_store(w, err, sizeof(err)) == 0, "open: %s", err);
	verify(w);

	for (int cut = 0; cut < 2; cut++) {
		run_phase(w, PHASE_OPS, true, pick_keep(w));
		close_store(w);
		restart(w);
		verify(w);
	}
	/* It keeps working; a clean close leaves nothing to replay, unless
	 * the power goes during the close (its RocksDB flush). */
	run_phase(w, PHASE_OPS / 2, false, 0);
	bool cut_in_close = rnd(&w->rng) % 3 == 0;
	if (cut_in_close)
		fault_io_cut_at(w->fi, 1, pick_keep(w));
	close_store(w);
	if (cut_in_close) {
		CHECK(fault_io_is_cut(w->fi), "the close made no durability call");
		restart(w);
	} else {
		CHECK(open_store(w, err, sizeof(err)) == 0, "reopen after a clean close: %s", err);
		struct store_stats ss;
		store_stats(w->s, &ss);
		CHECK(ss.kv.replayed == 0, "a clean close left %llu records to replay",
		      (unsigned long long)ss.kv.replayed);
	}
	verify(w);
	close_store(w);

	struct fault_io_stats fs;
	fault_io_stats(w->fi, &fs);
	tot->puts += w->st.puts;
	tot->dels += w->st.dels;
	tot->gets += w->st.gets;
	tot->failed += w->st.failed;
	tot->cand_seen += w->st.cand_seen;
	tot->cand_lost += w->st.cand_lost;
	tot->replayed += w->st.replayed;
	tot->reopens += w->st.reopens;
	tot->bg_flushes += w->st.bg_flushes;
	tot->injected += w->st.injected;
	tot->dev_failed += w->st.dev_failed;
	printf("powercut: seed %llu: clog %llu KiB, %llu cuts (%llu sectors dropped, %llu kept), "
	       "%llu RocksDB snapshots, %llu records replayed, %llu puts and %llu deletes "
	       "acknowledged, %llu failed (%llu took effect)\n",
	       (unsigned long long)seed, (unsigned long long)(w->o.commit_log_bytes >> 10),
	       (unsigned long long)fs.cuts, (unsigned long long)fs.sectors_dropped,
	       (unsigned long long)fs.sectors_kept, (unsigned long long)fs.snapshots,
	       (unsigned long long)w->st.replayed, (unsigned long long)w->st.puts,
	       (unsigned long long)w->st.dels, (unsigned long long)w->st.failed,
	       (unsigned long long)w->st.cand_seen);
	fflush(stdout);
	fault_io_destroy(w->fi);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	CHECK(uv_loop_close(&w->loop) == 0, "loop still has handles");
	free(w);
	cleanup();
}

static uint64_t env_u64(const char *name, uint64_t dflt, bool *set)
{
	const char *v = getenv(name);
	if (set)
		*set = v && *v;
	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

START_TEST(powercut)
{
	bool seed_set;
	uint64_t base = env_u64("POWERCUT_SEED", (uint64_t)time(NULL) * 1000 + (uint64_t)getpid() % 1000,
				&seed_set);
	uint64_t rounds = env_u64("POWERCUT_ROUNDS", seed_set ? 1 : 50, NULL);
	printf("powercut: %llu rounds, seeds %llu..%llu\n", (unsigned long long)rounds,
	       (unsigned long long)base, (unsigned long long)(base + rounds - 1));
	fflush(stdout);
	struct stats tot = { 0 };
	for (uint64_t r = 0; r < rounds; r++)
		round_run(base + r, &tot);
	printf("powercut: %llu rounds passed: %llu puts, %llu deletes, %llu gets acknowledged "
	       "and checked across %llu restarts (%llu records replayed, %llu RocksDB flushes "
	       "of its own); %llu operations failed at a cut or an injected commit-log error, "
	       "%llu of them took effect, %llu did not; %llu errors injected, %llu puts failed "
	       "by a device error\n",
	       (unsigned long long)rounds, (unsigned long long)tot.puts,
	       (unsigned long long)tot.dels, (unsigned long long)tot.gets,
	       (unsigned long long)tot.reopens, (unsigned long long)tot.replayed,
	       (unsigned long long)tot.bg_flushes,
	       (unsigned long long)tot.failed, (unsigned long long)tot.cand_seen,
	       (unsigned long long)tot.cand_lost, (unsigned long long)tot.injected,
	       (unsigned long long)tot.dev_failed);
}
END_TEST

/* ------------------------------------------------------------ the simulation itself */

static int read_byte_at(const char *path, off_t off)
{
	int fd = open(path, O_RDONLY);
	unsigned char c = 0;
	ssize_t n = pread(fd, &c, 1, off);
	close(fd);
	return n == 1 ? c : -1;
}

struct dev_wait {
	int left;
	int res[4];
};

static void on_dev(void *arg, struct store_io_req *req, int res)
{
	(void)req;
	struct dev_wait *w = arg;
	w->res[4 - w->left] = res;
	w->left--;
}

START_TEST(seam)
{
	char path[160], err[256];
	snprintf(path, sizeof(path), "%s.file", dev);
	unlink(path);
	struct fault_io *fi;
	struct fault_io_opts fo = { .seed = 7, .snap_dir = snap, .dev_max_turns = 4 };
	ck_assert_int_eq(fault_io_new(&fo, &fi), 0);
	const struct store_io *io = fault_io_ops(fi);
	static uint8_t a[8192] __attribute__((aligned(4096)));

	/* Flushed bytes stay; unflushed ones go (keep 0), extensions too. */
	int fd = io->open(io, path, O_RDWR | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	memset(a, 'a', 4096);
	ck_assert_int_eq(store_io_pwrite_all(io, fd, a, 4096, 0), 0);
	ck_assert_int_eq(io->fdatasync(io, fd), 0);
	memset(a, 'b', 8192);
	ck_assert_int_eq(store_io_pwrite_all(io, fd, a, 8192, 0), 0);
	ck_assert_int_eq(read_byte_at(path, 0), 'b'); /* readers see it meanwhile */
	fault_io_cut(fi, 0);
	ck_assert_int_eq(io->pwrite(io, fd, a, 1, 0), -EIO); /* dead */
	ck_assert_int_eq(read_byte_at(path, 0), 'a');
	ck_assert_int_eq(read_byte_at(path, 4096), 0);
	ck_assert_int_eq(fault_io_recover(fi, err, sizeof(err)), 0);

	/* keep 1000: every unflushed sector holds one of its versions. */
	memset(a, 'c', 4096);
	ck_assert_int_eq(store_io_pwrite_all(io, fd, a, 4096, 0), 0);
	memset(a, 'd', 4096);
	ck_assert_int_eq(store_io_pwrite_all(io, fd, a, 4096, 0), 0);
	fault_io_cut(fi, 1000);
	int c = read_byte_at(path, 0);
	ck_assert_msg(c == 'c' || c == 'd', "sector holds %c", c);
	ck_assert_int_eq(fault_io_recover(fi, err, sizeof(err)), 0);

	/* An armed cut: the 2nd event from now (the fdatasync) fails and
	 * does not flush. */
	memset(a, 'e', 4096);
	fault_io_cut_at(fi, 2, 0);
	ck_assert_int_eq(store_io_pwrite_all(io, fd, a, 4096, 4096), 0);
	ck_assert_int_eq(io->fdatasync(io, fd), -EIO);
	ck_assert(fault_io_is_cut(fi));
	ck_assert_int_eq(read_byte_at(path, 4096), 0);
	ck_assert_int_eq(fault_io_recover(fi, err, sizeof(err)), 0);

	/* Injected errors: the 2nd pwrite from now, once. */
	fault_io_fail(fi, FAULT_IO_PWRITE, 2, ENOSPC);
	ck_assert_int_eq(io->pwrite(io, fd, a, 4096, 0), 4096);
	ck_assert_int_eq(io->pwrite(io, fd, a, 4096, 0), -ENOSPC);
	ck_assert_int_eq(io->pwrite(io, fd, a, 4096, 0), 4096);
	ck_assert_int_eq(io->fdatasync(io, fd), 0);

	/* The device: a FSYNC covers the writes completed before it was
	 * submitted, not one submitted with it (whatever the completion
	 * order the turns give). */
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct dev_wait wt = { .left = 1 };
	struct store_io_aio *aio;
	ck_assert_int_eq(io->aio_open(io, &loop, fd, 8, on_dev, &wt, &aio), 0);
	memset(a, 'x', 4096);
	struct store_io_req w1 = { STORE_IO_WRITE, a, 4096, 0 };
	io->aio_submit(aio, &w1);
	while (wt.left)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_int_eq(wt.res[3], 4096);
	memset(a + 4096, 'y', 4096);
	struct store_io_req f1 = { STORE_IO_FSYNC, NULL, 0, 0 };
	struct store_io_req w2 = { STORE_IO_WRITE, a + 4096, 4096, 4096 };
	wt.left = 2;
	io->aio_submit(aio, &f1);
	io->aio_submit(aio, &w2);
	while (wt.left)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_int_eq(read_byte_at(path, 4096), 'y');
	fault_io_cut(fi, 0);
	ck_assert_int_eq(read_byte_at(path, 0), 'x');
	ck_assert_int_eq(read_byte_at(path, 4096), 0); /* every write there was dropped */
	io->aio_close(aio, NULL, NULL);
	io->close(io, fd);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	fault_io_destroy(fi);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/store_powercut");
	TCase *tc = tcase_create("powercut");
	tcase_add_unchecked_fixture(tc, setup_once, cleanup);
	uint64_t rounds = env_u64("POWERCUT_ROUNDS", getenv("POWERCUT_SEED") ? 1 : 50, NULL);
	tcase_set_timeout(tc, (double)(60 + rounds * 4));
	tcase_add_test(tc, seam);
	tcase_add_test(tc, powercut);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
