/*
 * store.c — the shard store: puts, gets, deletes, stats and listings over
 * dev (io_uring data), kv (group-committed RocksDB index) and alloc.
 *
 * Owns: the open sequence, the write pipeline, the per-key mutation table
 * and deferred extent release. Runs on one loop thread (the owner's); the
 * only other thread is kv's commit thread, which reaches us through
 * s->q, except store_get_now: any thread, it reads RocksDB's memory only
 * (memtables, block cache; thread-safe) and req, and counts in two
 * atomics.
 *
 * Invariants:
 *  - A block is committed in the allocator iff a committed index record
 *    names it (rebuild at open restores exactly that). A put's extent is
 *    reserved until its record commits; a replaced or deleted extent is
 *    released only after the record that drops it committed.
 *  - Large put order: write data -> fdatasync -> index commit -> callback.
 *    Puts whose writes completed share one fdatasync (flush group), and
 *    their index records share one RocksDB flush (kv group commit).
 *  - Mutations of one key may overlap; the index applies them in the order
 *    they reach the commit stage. store_mut remembers, per key with
 *    mutations in flight, the extent the last queued one leaves behind, so
 *    each mutation frees exactly the extent its record replaces.
 *  - A get may have read an index record whose extent is released while
 *    the read is in flight; releases are deferred (release epochs) until
 *    every read older than the release finished, so a freed block is never
 *    rewritten under a read (no false checksum errors).
 *  - A shard's bad-shard record (the scrubber's, rec.h namespace 'B') is
 *    deleted in the same RocksDB batch as any put or delete of that shard,
 *    once any bad record may exist (bad_present), so a rewritten shard is
 *    never reported bad and the two cannot disagree after a crash.
 * Does not: log, retry, or scrub (scrub.c walks the store through the
 * public calls and the few hooks at the end of store.h).
 */
#include "osd/store/store.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/crc.h"
#include "common/err.h"
#include "osd/store/alloc.h"
#include "osd/store/cache.h"
#include "osd/store/super.h"

#define MUT_BUCKETS 1024
#define IDENT_KEY "\x01ident"
#define IDENT_VERSION 1
#define IDENT_LEN (1 + 16 + 4 + 16)

struct store_mut {
	uint8_t k[STORE_KEY_LEN];
	struct store_mut *next;
	uint32_t refs;       /* mutations of this key in flight */
	bool exists;         /* the key exists after the last queued mutation */
	bool ext;            /* ... and names an extent */
	uint64_t block;
	uint32_t blocks;
	uint64_t ilen;       /* ... or holds this many bytes inline */
};

struct deferred {
	uint64_t block;
	uint32_t blocks;
	uint64_t seq;
	struct deferred *next;
};

struct store {
	uv_loop_t *loop;
	const struct store_io *io;    /* the I/O seam (io.h) */
	struct store_super sb;
	struct store_dev *dev;
	struct store_kv *kv;
	struct store_alloc *alloc;
	struct loop_queue q;          /* kv completions, deferred callbacks */
	uint32_t inline_max;
	uint64_t max_shard;
	uint32_t max_inflight;
	uint32_t inflight;
	bool failed;                  /* an index write failed: refuse mutations */
	bool closing, close_posted;
	struct loop_work close_work;
	int pending_closes;
	void (*close_cb)(void *arg);
	void *close_arg;

	struct store_mut *muts[MUT_BUCKETS];

	/* Flush group: puts whose data write completed wait for one fdatasync. */
	struct store_put_req *fl_wait_head, *fl_wait_tail, *fl_cur;
	bool flushing;
	struct store_dev_req fl_req;
	uint64_t fl_start_ns;
	struct store_observer obs;

	/* Release epochs (see the top comment). */
	uint64_t release_seq;
	struct store_get_req *reads_head, *reads_tail;
	struct deferred *def_head, *def_tail;

	struct store_stats st;
	/* store_get_now's reads, on callers' threads (added into st's) */
	atomic_uint_fast64_t now_gets, now_get_bytes;
	uint64_t inline_bytes;        /* inline shard bytes committed in the index */
	bool bad_present;             /* bad-shard records may exist: mutations
	                               * drop their key's one (see the top) */
};

/* ------------------------------------------------------------ helpers */

static void finish_op(struct store *s);

static uint32_t key_hash(const uint8_t *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < STORE_KEY_LEN; i++)
		h = (h ^ k[i]) * 16777619u;
	return h % MUT_BUCKETS;
}

static struct store_mut *mut_find(struct store *s, const uint8_t *k)
{
	for (struct store_mut *m = s->muts[key_hash(k)]; m; m = m->next)
		if (memcmp(m->k, k, STORE_KEY_LEN) == 0)
			return m;
	return NULL;
}

/* What the committed index says about key k: exists, and its extent or
 * inline length. */
static int index_lookup(struct store *s, const uint8_t *k, bool *exists, bool *ext,
			uint64_t *block, uint32_t *blocks, uint64_t *ilen)
{
	char *v;
	size_t vlen;
	*exists = *ext = false;
	*ilen = 0;
	int rc = store_kv_get(s->kv, k, STORE_KEY_LEN, &v, &vlen);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	*exists = true;
	struct store_rec r;
	rc = store_rec_decode(v, vlen, &r);
	/* A disk or an old bug wrote it: counted, and its extent (which we
	 * cannot trust) is never freed. */
	if (rc == 0 && !r.is_inline &&
	    IOL_CHECK_IF(r.block >= s->sb.data_blocks || r.blocks > s->sb.data_blocks - r.block))
		rc = IOL_ECORRUPT;
	(void)IOL_CHECK_IF(rc != 0);
	if (rc == 0 && !r.is_inline) {
		*ext = true;
		*block = r.block;
		*blocks = r.blocks;
	} else if (rc == 0) {
		*ilen = r.length;
	}
	free(v);
	/* An undecodable old record: replace it, but do not free what we
	 * cannot name (a leak until the next rebuild, never a double free). */
	return 0;
}

/* Enter the commit stage of a mutation of k whose record leaves
 * (exists, ext, block, blocks, ilen) behind; learn what it replaces. */
static struct store_mut *mut_begin(struct store *s, const uint8_t *k, bool exists, bool ext,
				   uint64_t block, uint32_t blocks, uint64_t ilen, bool *old_ext,
				   uint64_t *old_block, uint32_t *old_blocks, uint64_t *old_ilen)
{
	struct store_mut *m = mut_find(s, k);
	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		bool ex;
		if (index_lookup(s, k, &ex, &m->ext, &m->block, &m->blocks, &m->ilen) != 0) {
			free(m);
			return NULL;
		}
		m->exists = ex;
		memcpy(m->k, k, STORE_KEY_LEN);
		uint32_t h = key_hash(k);
		m->next = s->muts[h];
		s->muts[h] = m;
	}
	*old_ext = m->ext;
	*old_block = m->block;
	*old_blocks = m->blocks;
	*old_ilen = m->ilen;
	m->exists = exists;
	m->ext = ext;
	m->block = block;
	m->blocks = blocks;
	m->ilen = ilen;
	m->refs++;
	return m;
}

static void mut_end(struct store *s, struct store_mut *m)
{
	if (--m->refs)
		return;
	struct store_mut **pp = &s->muts[key_hash(m->k)];
	while (*pp != m)
		pp = &(*pp)->next;
	*pp = m->next;
	free(m);
}

/* A committed record changed a key's inline bytes from old_len to new_len. */
static void inline_account(struct store *s, uint64_t new_len, uint64_t old_len)
{
	s->inline_bytes += new_len;
	s->inline_bytes = s->inline_bytes >= old_len ? s->inline_bytes - old_len : 0;
}

static void release_extent(struct store *s, uint64_t block, uint32_t blocks)
{
	uint64_t seq = ++s->release_seq;
	if (!s->reads_head) {
		store_alloc_release(s->alloc, block, blocks);
		return;
	}
	struct deferred *d = malloc(sizeof(*d));
	if (!d)
		return; /* leak until restart: safer than freeing under a read */
	d->block = block;
	d->blocks = blocks;
	d->seq = seq;
	d->next = NULL;
	if (s->def_tail)
		s->def_tail->next = d;
	else
		s->def_head = d;
	s->def_tail = d;
}

static void drain_deferred(struct store *s)
{
	struct deferred *d;
	while ((d = s->def_head) &&
	       (!s->reads_head || s->reads_head->start_seq >= d->seq)) {
		s->def_head = d->next;
		if (!s->def_head)
			s->def_tail = NULL;
		store_alloc_release(s->alloc, d->block, d->blocks);
		free(d);
	}
}

static void read_begin(struct store *s, struct store_get_req *r)
{
	r->start_seq = s->release_seq;
	r->rnext = NULL;
	r->rprev = s->reads_tail;
	if (s->reads_tail)
		s->reads_tail->rnext = r;
	else
		s->reads_head = r;
	s->reads_tail = r;
}

static void read_end(struct store *s, struct store_get_req *r)
{
	if (r->rprev)
		r->rprev->rnext = r->rnext;
	else
		s->reads_head = r->rnext;
	if (r->rnext)
		r->rnext->rprev = r->rprev;
	else
		s->reads_tail = r->rprev;
	drain_deferred(s);
}

/* A mutation of key k entering the commit stage: its batch also deletes
 * k's bad-shard record, if the scrubber may have written one. */
static void drop_bad_record(struct store *s, rocksdb_writebatch_t *wb, const uint8_t *k)
{
	if (!s->bad_present)
		return;
	uint8_t bk[STORE_KEY_LEN];
	store_key_to_bad(k, bk);
	rocksdb_writebatch_delete(wb, (const char *)bk, STORE_KEY_LEN);
}

static bool key_valid(const struct store_key *k)
{
	return k->oid_len >= 1 && k->oid_len <= STORE_OID_MAX;
}

static int check_accept(struct store *s)
{
	if (s->closing)
		return IOL_ESHUTDOWN;
	if (s->inflight >= s->max_inflight)
		return -EAGAIN;
	return 0;
}

/* ------------------------------------------------------------ put */

static void put_done(struct store_put_req *req, int status)
{
	struct store *s = req->s;
	buf_unref(req->bounce);
	req->bounce = NULL;
	if (req->wb) {
		rocksdb_writebatch_destroy(req->wb);
		req->wb = NULL;
	}
	finish_op(s);
	req->cb(req, status); /* may free req */
}

/* Before the commit stage: give back the reservation. */
static void put_fail_early(struct store_put_req *req, int status)
{
	if (req->blocks)
		store_alloc_unreserve(req->s->alloc, req->block, req->blocks);
	put_done(req, status);
}

static void on_put_committed(struct store_kv_req *kreq, int status)
{
	struct store_put_req *req = container_of(kreq, struct store_put_req, kreq);
	struct store *s = req->s;
	if (status) {
		/* RocksDB may or may not hold the record; it stops taking
		 * writes after a failed sync. Refuse further mutations and
		 * leave the allocator as is: the next open rebuilds it. */
		s->failed = true;
		put_done(req, status);
		return;
	}
	if (req->blocks)
		store_alloc_commit(s->alloc, req->block, req->blocks);
	if (req->old_ext)
		release_extent(s, req->old_block, req->old_blocks);
	inline_account(s, req->is_inline ? req->length : 0, req->old_ilen);
	mut_end(s, req->mut);
	s->st.puts++;
	s->st.put_bytes += req->length;
	put_done(req, 0);
}

static void put_commit(struct store_put_req *req)
{
	struct store *s = req->s;
	if (s->failed) {
		put_fail_early(req, -EIO);
		return;
	}
	req->mut = mut_begin(s, req->kbuf, true, req->blocks != 0, req->block, req->blocks,
			     req->is_inline ? req->length : 0, &req->old_ext, &req->old_block,
			     &req->old_blocks, &req->old_ilen);
	if (!req->mut) {
		put_fail_early(req, -ENOMEM);
		return;
	}
	drop_bad_record(s, req->wb, req->kbuf);
	int rc = store_kv_commit(s->kv, &req->kreq, req->wb, &s->q, on_put_committed);
	if (rc) {
		/* Cannot happen while inflight <= max_inflight < kv's bound and
		 * kv closes only after inflight drained; if it does, the mut
		 * table is now ahead of the index: stop mutating. */
		s->failed = true;
		put_done(req, rc);
	}
}

static void flush_start(struct store *s);

static void on_flushed(struct store_dev_req *dreq, int status)
{
	struct store *s = container_of(dreq, struct store, fl_req);
	struct store_put_req *list = s->fl_cur;
	s->fl_cur = NULL;
	s->flushing = false;
	s->st.data_flushes++;
	if (s->obs.data_flush) {
		uint32_t n = 0;
		for (struct store_put_req *r = list; r; r = r->next)
			n++;
		s->obs.data_flush(s->obs.arg, n, s->io->now_ns(s->io) - s->fl_start_ns);
	}
	while (list) {
		struct store_put_req *next = list->next;
		if (status)
			put_fail_early(list, status);
		else
			put_commit(list);
		list = next;
	}
	flush_start(s);
}

static void flush_start(struct store *s)
{
	if (s->flushing || !s->fl_wait_head)
		return;
	s->fl_cur = s->fl_wait_head;
	s->fl_wait_head = s->fl_wait_tail = NULL;
	s->flushing = true;
	s->fl_start_ns = s->io->now_ns(s->io);
	int rc = store_dev_fsync(s->dev, &s->fl_req, on_flushed);
	if (rc) {
		/* Only while closing, which waits for these very puts: fail them. */
		struct store_put_req *list = s->fl_cur;
		s->fl_cur = NULL;
		s->flushing = false;
		while (list) {
			struct store_put_req *next = list->next;
			put_fail_early(list, rc);
			list = next;
		}
	}
}

static void on_put_written(struct store_dev_req *dreq, int status)
{
	struct store_put_req *req = container_of(dreq, struct store_put_req, dreq);
	struct store *s = req->s;
	if (status) {
		put_fail_early(req, status);
		return;
	}
	/* The data buffer is no longer needed: only the record rides on. */
	buf_unref(req->bounce);
	req->bounce = NULL;
	req->next = NULL;
	if (s->fl_wait_tail)
		s->fl_wait_tail->next = req;
	else
		s->fl_wait_head = req;
	s->fl_wait_tail = req;
	flush_start(s);
}

/* Debug tier: the extent record about to be indexed decodes to what the
 * put meant to index. */
static bool rec_says(const uint8_t *rec, size_t rec_len, uint64_t length, uint64_t block,
		     uint32_t blocks, uint32_t crc)
{
	struct store_rec r;
	return store_rec_decode(rec, rec_len, &r) == 0 && !r.is_inline && r.length == length &&
	       r.block == block && r.blocks == blocks && r.crc == crc;
}

static int put_common(struct store *s, struct store_put_req *req, const struct store_key *key,
		      struct buf_slice data, const uint32_t *want_crc, bool verify,
		      store_put_cb cb);

int store_put(struct store *s, struct store_put_req *req, const struct store_key *key,
	      struct buf_slice data, store_put_cb cb)
{
	return put_common(s, req, key, data, NULL, true, cb);
}

int store_put_crc(struct store *s, struct store_put_req *req, const struct store_key *key,
		  struct buf_slice data, uint32_t crc, bool verify, store_put_cb cb)
{
	return put_common(s, req, key, data, &crc, verify, cb);
}

/* The bytes an extent put writes, whole blocks, held in req->bounce until
 * written. A caller's slice that already is whole aligned blocks is
 * written where it is, under a reference (no copy: a 4 MiB PUT's six
 * 1 MiB shards were 6 MiB of memcpy into freshly faulted bounce buffers,
 * ~13% of iolake-aio's CPU). The buf contract (common/buf.h: filled, then
 * shared read-only) keeps those bytes still; a caller that broke it would
 * make the crcs taken here disagree with the disk, which a read reports
 * as corruption, never as good data. Anything else is copied into an
 * aligned buffer padded with zeros. NULL: out of memory. */
static const uint8_t *put_source(struct store_put_req *req, struct buf_slice data,
				 uint32_t blocks)
{
	const uint8_t *src = buf_slice_data(&data);
	size_t whole = (size_t)blocks * STORE_BLOCK_SIZE;
	if (data.len == whole && (uintptr_t)src % STORE_BLOCK_SIZE == 0) {
		req->bounce = buf_ref(data.buf);
		return src;
	}
	req->bounce = buf_new_aligned(whole, STORE_BLOCK_SIZE);
	if (!req->bounce)
		return NULL;
	uint8_t *p = req->bounce->data;
	memcpy(p, src, data.len);
	memset(p + data.len, 0, whole - data.len);
	req->bounce->len = whole;
	return p;
}

/* want_crc NULL: no expected crc (compute it); else refuse a mismatch, or
 * (inline, !verify) take it as is. */
static int put_common(struct store *s, struct store_put_req *req, const struct store_key *key,
		      struct buf_slice data, const uint32_t *want_crc, bool verify,
		      store_put_cb cb)
{
	int rc = check_accept(s);
	if (rc)
		return rc;
	if (s->failed)
		return -EIO;
	if (!key_valid(key))
		return -EINVAL;
	if (data.len > s->max_shard)
		return IOL_ETOO_LARGE;
	const uint8_t *src = buf_slice_data(&data);
	if (data.len && !src)
		return -EINVAL;

	void *user = req->data;
	memset(req, 0, sizeof(*req));
	req->data = user;
	req->s = s;
	req->key = *key;
	req->cb = cb;
	req->length = data.len;
	store_key_encode(key, req->kbuf);
	req->wb = rocksdb_writebatch_create();

	if (data.len <= s->inline_max) {
		uint8_t hdr[STORE_REC_HDR];
		req->is_inline = true;
		if (want_crc && !verify) {
			req->crc = *want_crc;
		} else {
			req->crc = crc32c(0, src, data.len);
			if (want_crc && req->crc != *want_crc) {
				rc = IOL_ECHECKSUM;
				goto out_wb;
			}
		}
		store_rec_encode_inline_hdr(hdr, data.len, req->crc);
		const char *keys[1] = { (const char *)req->kbuf };
		size_t klens[1] = { STORE_KEY_LEN };
		const char *vals[2] = { (const char *)hdr, (const char *)src };
		size_t vlens[2] = { STORE_REC_HDR, data.len };
		rocksdb_writebatch_putv(req->wb, 1, keys, klens, data.len ? 2 : 1, vals, vlens);
		s->inflight++;
		s->st.puts_inline++;
		put_commit(req);
		return 0;
	}

	uint32_t blocks = (uint32_t)((data.len + STORE_BLOCK_SIZE - 1) / STORE_BLOCK_SIZE);
	uint64_t block;
	rc = store_alloc_reserve(s->alloc, blocks, &block);
	if (rc)
		goto out_wb;
	size_t rec_len = store_rec_extent_size(data.len);
	uint8_t *rec = malloc(rec_len);
	const uint8_t *p = rec ? put_source(req, data, blocks) : NULL;
	if (!p) {
		free(rec);
		rc = -ENOMEM;
		goto out_unreserve;
	}
	/* crcs of the bytes we write (the copy, or the caller's buffer we
	 * hold: see put_source). */
	req->crc = store_rec_encode_extent(rec, p, data.len, block, blocks);
	if (want_crc && req->crc != *want_crc) {
		free(rec);
		rc = IOL_ECHECKSUM;
		goto out_unreserve;
	}
	IOL_DEBUG_ASSERT(rec_says(rec, rec_len, data.len, block, blocks, req->crc));
	IOL_ASSERT(block < s->sb.data_blocks && blocks <= s->sb.data_blocks - block);
	rocksdb_writebatch_put(req->wb, (const char *)req->kbuf, STORE_KEY_LEN,
			       (const char *)rec, rec_len);
	free(rec);
	req->block = block;
	req->blocks = blocks;
	rc = store_dev_write(s->dev, &req->dreq, p, blocks * STORE_BLOCK_SIZE,
			     s->sb.data_off + block * STORE_BLOCK_SIZE, on_put_written);
	if (rc)
		goto out_unreserve;
	s->inflight++;
	return 0;

out_unreserve:
	store_alloc_unreserve(s->alloc, block, blocks);
	buf_unref(req->bounce);
	req->bounce = NULL;
out_wb:
	rocksdb_writebatch_destroy(req->wb);
	req->wb = NULL;
	return rc;
}

/* ------------------------------------------------------------ delete */

static void on_del_committed(struct store_kv_req *kreq, int status)
{
	struct store_del_req *req = container_of(kreq, struct store_del_req, kreq);
	struct store *s = req->s;
	if (status) {
		s->failed = true;
	} else {
		if (req->old_ext)
			release_extent(s, req->old_block, req->old_blocks);
		inline_account(s, 0, req->old_ilen);
		mut_end(s, req->mut);
		s->st.deletes++;
	}
	rocksdb_writebatch_destroy(req->wb);
	req->wb = NULL;
	finish_op(s);
	req->cb(req, status);
}

int store_delete(struct store *s, struct store_del_req *req, const struct store_key *key,
		 store_del_cb cb)
{
	int rc = check_accept(s);
	if (rc)
		return rc;
	if (s->failed)
		return -EIO;
	if (!key_valid(key))
		return -EINVAL;
	void *user = req->data;
	memset(req, 0, sizeof(*req));
	req->data = user;
	req->s = s;
	req->key = *key;
	req->cb = cb;
	store_key_encode(key, req->kbuf);

	/* Exists after the mutations already queued, or in the index? */
	struct store_mut *m = mut_find(s, req->kbuf);
	bool exists, ext;
	uint64_t b, il;
	uint32_t n;
	if (m) {
		exists = m->exists;
	} else {
		rc = index_lookup(s, req->kbuf, &exists, &ext, &b, &n, &il);
		if (rc)
			return rc;
	}
	if (!exists)
		return IOL_ENOT_FOUND;
	req->mut = mut_begin(s, req->kbuf, false, false, 0, 0, 0, &req->old_ext, &req->old_block,
			     &req->old_blocks, &req->old_ilen);
	if (!req->mut)
		return -ENOMEM;
	req->wb = rocksdb_writebatch_create();
	rocksdb_writebatch_delete(req->wb, (const char *)req->kbuf, STORE_KEY_LEN);
	drop_bad_record(s, req->wb, req->kbuf);
	rc = store_kv_commit(s->kv, &req->kreq, req->wb, &s->q, on_del_committed);
	if (rc) {
		s->failed = true; /* the mut table is ahead of the index */
		rocksdb_writebatch_destroy(req->wb);
		return rc;
	}
	s->inflight++;
	return 0;
}

/* ------------------------------------------------------------ get */

static void get_done(struct store_get_req *req)
{
	struct store *s = req->s;
	rocksdb_pinnableslice_destroy(req->pin);
	req->pin = NULL;
	req->val = NULL;
	if (req->status == 0) {
		s->st.gets++;
		s->st.get_bytes += req->out.len;
	} else if (req->status == IOL_ECHECKSUM) {
		s->st.checksum_errors++;
	}
	finish_op(s);
	req->cb(req, req->status);
}

static void on_get_deferred(struct loop_work *w)
{
	get_done(container_of(w, struct store_get_req, work));
}

static void checksum_error(struct store_get_req *req, uint64_t from, uint64_t to)
{
	char k[STORE_OID_MAX * 4 + 64];
	store_key_format(&req->key, k, sizeof(k));
	snprintf(req->err, sizeof(req->err), "checksum mismatch in shard %s, bytes %llu..%llu",
		 k, (unsigned long long)from, (unsigned long long)to);
	req->err_from = from;
	req->err_to = to;
	req->status = IOL_ECHECKSUM;
}

static void on_get_read(struct store_dev_req *dreq, int status)
{
	struct store_get_req *req = container_of(dreq, struct store_get_req, dreq);
	struct store *s = req->s;
	read_end(s, req);
	if (status) {
		req->status = status;
		goto out;
	}
	uint32_t c0 = (uint32_t)(req->off >> STORE_CRC_SHIFT);
	uint32_t c1 = (uint32_t)((req->off + req->len - 1) >> STORE_CRC_SHIFT);
	for (uint32_t i = c0; i <= c1; i++) {
		uint64_t start = (uint64_t)i << STORE_CRC_SHIFT;
		uint64_t blen = req->rec.length - start < STORE_CRC_BLOCK ?
					req->rec.length - start : STORE_CRC_BLOCK;
		uint32_t got = crc32c(0, req->buf->data + (start - req->rd_off), blen);
		if (got != store_rec_crc_at(&req->rec, i)) {
			checksum_error(req, start, start + blen - 1);
			goto out;
		}
	}
	req->out.buf = req->buf;
	req->out.off = req->off - req->rd_off;
	req->out.len = req->len;
	req->buf = NULL;
	req->status = 0;
out:
	buf_unref(req->buf);
	req->buf = NULL;
	get_done(req);
}

/* The last reference on an inline shard handed out: unpin its value. */
static void release_pin(struct buf *b)
{
	rocksdb_pinnableslice_destroy(b->owner);
}

/* What both reads begin with: req set up for key (keeping req->data), its
 * index record pinned and decoded, the range clamped. 0, or an error with
 * nothing held. Any thread (a RocksDB read and req's own fields). */
static int get_lookup(struct store *s, struct store_get_req *req, const struct store_key *key,
		      uint64_t off, uint64_t len, bool mem_only)
{
	if (!key_valid(key))
		return -EINVAL;
	void *user = req->data;
	memset(req, 0, sizeof(*req));
	req->data = user;
	req->s = s;
	req->key = *key;
	uint8_t k[STORE_KEY_LEN];
	store_key_encode(key, k);
	/* Pinned, not copied: an inline shard's bytes go out by reference
	 * to RocksDB's own buffer (one memcpy fewer per inline read). */
	int rc = mem_only ?
			 store_kv_get_pinned_mem(s->kv, k, sizeof(k), &req->pin, &req->val, &req->vlen) :
			 store_kv_get_pinned(s->kv, k, sizeof(k), &req->pin, &req->val, &req->vlen);
	if (rc)
		return rc;
	rc = store_rec_decode(req->val, req->vlen, &req->rec);
	if (rc == 0 && off > req->rec.length)
		rc = -EINVAL;
	if (rc) {
		rocksdb_pinnableslice_destroy(req->pin);
		req->pin = NULL;
		req->val = NULL;
		return rc;
	}
	req->stat = (struct store_stat){ .length = req->rec.length, .crc = req->rec.crc,
					 .is_inline = req->rec.is_inline,
					 .block = req->rec.block, .blocks = req->rec.blocks };
	req->off = off;
	req->len = len > req->rec.length - off ? req->rec.length - off : len;
	return 0;
}

/* An inline (or empty) read, after get_lookup: verify the whole value (it
 * is in memory anyway) and hand out RocksDB's pinned value, not a copy:
 * the buf unpins it. 0 (req->status 0 or IOL_ECHECKSUM) or -ENOMEM;
 * the pin is handed over or still held. Any thread. */
static int get_inline(struct store_get_req *req)
{
	if (req->rec.is_inline && crc32c(0, req->rec.data, req->rec.length) != req->rec.crc) {
		checksum_error(req, 0, req->rec.length ? req->rec.length - 1 : 0);
		return 0;
	}
	if (!req->len)
		return 0;
	req->out.buf = buf_wrap((void *)req->val, req->vlen, release_pin, req->pin);
	if (!req->out.buf)
		return -ENOMEM;
	req->out.off = (size_t)((const char *)req->rec.data - req->val) + req->off;
	req->out.len = req->len;
	req->val = NULL;
	req->pin = NULL;
	return 0;
}

int store_get_now(struct store *s, struct store_get_req *req, const struct store_key *key,
		  uint64_t off, uint64_t len)
{
	int rc = get_lookup(s, req, key, off, len, true);
	if (rc)
		return rc;
	if (req->len && !req->rec.is_inline)
		rc = -EWOULDBLOCK; /* on the device: store_get, on the loop */
	else if ((rc = get_inline(req)) == 0)
		rc = req->status;
	rocksdb_pinnableslice_destroy(req->pin); /* NULL once handed out */
	req->pin = NULL;
	req->val = NULL;
	if (rc == 0) {
		atomic_fetch_add_explicit(&s->now_gets, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->now_get_bytes, req->out.len, memory_order_relaxed);
	}
	return rc;
}

int store_get(struct store *s, struct store_get_req *req, const struct store_key *key,
	      uint64_t off, uint64_t len, store_get_cb cb)
{
	int rc = check_accept(s);
	if (rc)
		return rc;
	rc = get_lookup(s, req, key, off, len, false);
	if (rc)
		return rc;
	req->cb = cb;

	if (req->len == 0 || req->rec.is_inline) {
		rc = get_inline(req);
		if (rc)
			goto out_val;
		rc = loop_queue_post(&s->q, &req->work, on_get_deferred);
		if (rc) {
			buf_unref(req->out.buf);
			req->out.buf = NULL;
			goto out_val;
		}
		s->inflight++;
		return 0;
	}

	req->rd_off = (off >> STORE_CRC_SHIFT) << STORE_CRC_SHIFT;
	uint64_t end_blk = ((off + req->len - 1) >> STORE_CRC_SHIFT) + 1;
	uint64_t rd_end = end_blk << STORE_CRC_SHIFT;
	if (rd_end > req->rec.length)
		rd_end = req->rec.length;
	uint64_t rd_len = (rd_end - req->rd_off + STORE_BLOCK_SIZE - 1) & ~(uint64_t)(STORE_BLOCK_SIZE - 1);
	req->buf = buf_new_aligned(rd_len, STORE_BLOCK_SIZE);
	if (!req->buf) {
		rc = -ENOMEM;
		goto out_val;
	}
	req->buf->len = rd_len;
	read_begin(s, req);
	rc = store_dev_read(s->dev, &req->dreq, req->buf->data, (uint32_t)rd_len,
			    s->sb.data_off + req->rec.block * STORE_BLOCK_SIZE + req->rd_off,
			    on_get_read);
	if (rc) {
		read_end(s, req);
		buf_unref(req->buf);
		req->buf = NULL;
		goto out_val;
	}
	s->inflight++;
	return 0;

out_val:
	rocksdb_pinnableslice_destroy(req->pin);
	req->pin = NULL;
	req->val = NULL;
	return rc;
}

/* ------------------------------------------------------------ metadata */

static int stat_from(const char *v, size_t vlen, struct store_stat *out)
{
	struct store_rec r;
	int rc = store_rec_decode(v, vlen, &r);
	if (rc)
		return rc;
	out->length = r.length;
	out->crc = r.crc;
	out->is_inline = r.is_inline;
	out->block = r.block;
	out->blocks = r.blocks;
	return 0;
}

int store_stat(struct store *s, const struct store_key *key, struct store_stat *out)
{
	if (!key_valid(key))
		return -EINVAL;
	uint8_t k[STORE_KEY_LEN];
	store_key_encode(key, k);
	char *v;
	size_t vlen;
	int rc = store_kv_get(s->kv, k, sizeof(k), &v, &vlen);
	if (rc)
		return rc;
	rc = stat_from(v, vlen, out);
	free(v);
	return rc;
}

int store_stat_many(struct store *s, const struct store_key *keys, size_t n,
		    struct store_stat *out, int *status)
{
	if (n == 0)
		return 0;
	uint8_t *kb = malloc(n * STORE_KEY_LEN);
	const char **kp = malloc(n * sizeof(*kp));
	size_t *kl = malloc(n * sizeof(*kl));
	char **vals = calloc(n, sizeof(*vals));
	size_t *vl = calloc(n, sizeof(*vl));
	char **errs = calloc(n, sizeof(*errs));
	int rc = -ENOMEM;
	if (!kb || !kp || !kl || !vals || !vl || !errs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		store_key_encode(&keys[i], kb + i * STORE_KEY_LEN);
		kp[i] = (const char *)kb + i * STORE_KEY_LEN;
		kl[i] = STORE_KEY_LEN;
	}
	rocksdb_multi_get(store_kv_db(s->kv), store_kv_ropts(s->kv), n, kp, kl, vals, vl, errs);
	for (size_t i = 0; i < n; i++) {
		if (!key_valid(&keys[i]))
			status[i] = -EINVAL;
		else if (errs[i])
			status[i] = -EIO;
		else if (!vals[i])
			status[i] = IOL_ENOT_FOUND;
		else
			status[i] = stat_from(vals[i], vl[i], &out[i]);
		free(vals[i]);
		free(errs[i]);
	}
	rc = 0;
out:
	free(kb);
	free(kp);
	free(kl);
	free(vals);
	free(vl);
	free(errs);
	return rc;
}

int store_list(struct store *s, uint32_t pg, const struct store_key *after,
	       struct store_list_ent *out, size_t max, bool *more)
{
	uint8_t start[STORE_KEY_LEN];
	size_t start_len = 5;
	uint8_t prefix[5];
	struct store_key pk = { .pg = pg, .oid_len = 1 };
	store_key_encode(&pk, start);
	memcpy(prefix, start, 5);
	if (after) {
		if (!key_valid(after) || after->pg != pg)
			return -EINVAL;
		store_key_encode(after, start);
		start_len = STORE_KEY_LEN;
	}
	*more = false;
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(s->kv), store_kv_ropts(s->kv));
	rocksdb_iter_seek(it, (const char *)start, start_len);
	size_t n = 0;
	int rc = 0;
	for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vlen;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < 5 || memcmp(k, prefix, 5) != 0)
			break;
		if (after && kl == STORE_KEY_LEN && memcmp(k, start, STORE_KEY_LEN) == 0)
			continue;
		if (n == max) {
			*more = true;
			break;
		}
		const char *v = rocksdb_iter_value(it, &vlen);
		rc = store_key_decode(k, kl, &out[n].key);
		if (rc == 0)
			rc = stat_from(v, vlen, &out[n].stat);
		if (rc)
			break;
		n++;
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	if (err) {
		free(err);
		rc = -EIO;
	}
	rocksdb_iter_destroy(it);
	return rc ? rc : (int)n;
}

void store_space(struct store *s, struct store_space *out)
{
	struct store_alloc_stats a;
	store_alloc_stats(s->alloc, &a);
	out->total_bytes = a.total_blocks * STORE_BLOCK_SIZE;
	out->used_bytes = a.committed_blocks * STORE_BLOCK_SIZE;
	out->reserved_bytes = a.reserved_blocks * STORE_BLOCK_SIZE;
	out->free_bytes = a.free_blocks * STORE_BLOCK_SIZE;
	out->inline_bytes = s->inline_bytes;
}

void store_stats(struct store *s, struct store_stats *out)
{
	*out = s->st;
	out->gets += atomic_load_explicit(&s->now_gets, memory_order_relaxed);
	out->get_bytes += atomic_load_explicit(&s->now_get_bytes, memory_order_relaxed);
	store_kv_stats(s->kv, &out->kv);
	store_dev_stats(s->dev, &out->dev);
}

/* ------------------------------------------------------------ open/close */

static int check_ident(struct store *s, const char *meta_dir, bool formatted, char *err,
		       size_t errlen)
{
	uint8_t want[IDENT_LEN];
	want[0] = IDENT_VERSION;
	memcpy(want + 1, s->sb.cluster_id, 16);
	uint32_t id = htole32(s->sb.osd_id);
	memcpy(want + 17, &id, 4);
	memcpy(want + 21, s->sb.format_uuid, 16);

	char *v;
	size_t vlen;
	int rc = store_kv_get(s->kv, IDENT_KEY, sizeof(IDENT_KEY) - 1, &v, &vlen);
	if (rc == IOL_ENOT_FOUND) {
		if (!formatted) {
			snprintf(err, errlen,
				 "meta dir %s holds no index for this device (index lost or "
				 "wrong dir); refusing (restore the meta dir, or wipe the device and --format it)",
				 meta_dir);
			return IOL_ECONFLICT;
		}
		rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
		rocksdb_writebatch_put(wb, IDENT_KEY, sizeof(IDENT_KEY) - 1, (const char *)want,
				       sizeof(want));
		rc = store_kv_write_sync(s->kv, wb);
		rocksdb_writebatch_destroy(wb);
		if (rc)
			snprintf(err, errlen, "meta dir %s: writing identity failed", meta_dir);
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "meta dir %s: read error", meta_dir);
		return rc;
	}
	bool same = vlen == IDENT_LEN && memcmp(v, want, IDENT_LEN) == 0;
	free(v);
	if (!same) {
		snprintf(err, errlen,
			 "meta dir %s belongs to another device format or OSD than the "
			 "superblock (osd %u); refusing",
			 meta_dir, s->sb.osd_id);
		return IOL_ECONFLICT;
	}
	return 0;
}

static int rebuild_alloc(struct store *s, char *err, size_t errlen)
{
	int rc = store_alloc_new(s->sb.data_blocks, &s->alloc);
	if (rc) {
		snprintf(err, errlen, "allocator: %s", iol_strerror(rc));
		return rc;
	}
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(s->kv), store_kv_ropts(s->kv));
	char ns = STORE_KEY_NS;
	for (rocksdb_iter_seek(it, &ns, 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		if (kl < 1 || k[0] != STORE_KEY_NS)
			break;
		const char *v = rocksdb_iter_value(it, &vl);
		struct store_key key;
		struct store_rec r;
		rc = store_key_decode(k, kl, &key);
		if (rc == 0)
			rc = store_rec_decode(v, vl, &r);
		if (rc == 0 && !r.is_inline)
			rc = store_alloc_mark(s->alloc, r.block, r.blocks);
		else if (rc == 0)
			s->inline_bytes += r.length;
		if (rc) {
			char name[STORE_OID_MAX * 4 + 64] = "(undecodable key)";
			if (store_key_decode(k, kl, &key) == 0)
				store_key_format(&key, name, sizeof(name));
			snprintf(err, errlen, "index record of %s: %s", name,
				 rc == IOL_ECORRUPT && !r.is_inline ?
					 "corrupt or overlapping extent" : iol_strerror(rc));
			break;
		}
	}
	char *e = NULL;
	rocksdb_iter_get_error(it, &e);
	if (e) {
		snprintf(err, errlen, "index scan: %s", e);
		free(e);
		rc = -EIO;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/* Does the index hold any bad-shard record? (A read error says yes: the
 * cost of a wrong yes is one extra delete per mutation.) */
static bool any_bad_record(struct store *s)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(s->kv), store_kv_ropts(s->kv));
	char ns = STORE_BAD_NS;
	rocksdb_iter_seek(it, &ns, 1);
	bool any = true;
	if (rocksdb_iter_valid(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		any = kl >= 1 && k[0] == STORE_BAD_NS;
	} else {
		char *e = NULL;
		rocksdb_iter_get_error(it, &e);
		any = e != NULL;
		free(e);
	}
	rocksdb_iter_destroy(it);
	return any;
}

static void free_on_queue_closed(struct loop_queue *q)
{
	free(container_of(q, struct store, q));
}

int store_open(uv_loop_t *loop, const struct store_opts *o, struct store **out, char *err,
	       size_t errlen)
{
	int rc;
	if (!o->device_path || !o->meta_dir) {
		snprintf(err, errlen, "device path and meta dir are required");
		return -EINVAL;
	}
	struct store *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->loop = loop;
	s->io = store_io_or_default(o->io);
	s->inline_max = o->inline_max_bytes ? o->inline_max_bytes : 64 << 10;
	s->max_shard = o->max_shard_bytes ? o->max_shard_bytes : 64ull << 20;
	if (s->max_shard > ((uint64_t)UINT32_MAX & ~(uint64_t)(STORE_BLOCK_SIZE - 1)))
		s->max_shard = (uint64_t)UINT32_MAX & ~(uint64_t)(STORE_BLOCK_SIZE - 1);
	s->max_inflight = o->max_inflight ? o->max_inflight : 1024;

	struct store_super_expect ex = { .osd_id = o->osd_id };
	memcpy(ex.cluster_id, o->cluster_id, 16);
	struct store_super_flags fl = { .format = o->format, .force = o->force,
					.create_size = o->create_size,
					.create_sparse = o->create_sparse };
	int fd;
	bool formatted;
	rc = store_super_open(s->io, o->device_path, &ex, &fl, &fd, &s->sb, &formatted, err,
			      errlen);
	if (rc)
		goto out_free;
	if (formatted) {
		/* A new format invalidates any index left in meta_dir. */
		rc = store_kv_destroy(o->meta_dir, err, errlen);
		if (rc)
			goto out_fd;
	}
	/* kv's bound is above ours, so a commit is never refused for space. */
	rc = store_kv_open(s->io, o->meta_dir, s->max_inflight * 2, o->commit_log_bytes,
			   store_cache_rocksdb(o->cache), o->write_buffer_bytes, &s->kv, err, errlen);
	if (rc)
		goto out_fd;
	s->obs = o->observer;
	if (s->obs.kv_batch)
		store_kv_set_observer(s->kv, s->obs.kv_batch, s->obs.arg);
	rc = check_ident(s, o->meta_dir, formatted, err, errlen);
	if (rc)
		goto out_kv;
	if (formatted) {
		/* Meta first (identity above), then the superblock: a crash in
		 * between leaves a device that is still unformatted, or a
		 * created file that is not yet at its path. */
		rc = store_super_commit(s->io, fd, o->device_path, &s->sb, err, errlen);
		if (rc)
			goto out_kv;
	}
	rc = rebuild_alloc(s, err, errlen);
	if (rc)
		goto out_alloc;
	s->bad_present = any_bad_record(s);
	rc = loop_queue_init(&s->q, loop);
	if (rc) {
		snprintf(err, errlen, "loop queue: %s", iol_strerror(rc));
		goto out_alloc;
	}
	rc = store_dev_open(loop, s->io, fd, o->queue_depth, &s->dev); /* takes fd */
	if (rc) {
		snprintf(err, errlen, "%s: device engine (io_uring) setup: %s", o->device_path,
			 iol_strerror(rc));
		/* The queue's handle closes through the loop; s goes with it. */
		loop_queue_close(&s->q, free_on_queue_closed);
		store_alloc_destroy(s->alloc);
		store_kv_close(s->kv);
		return rc;
	}
	snprintf(err, errlen, "ok");
	*out = s;
	return 0;

out_alloc:
	store_alloc_destroy(s->alloc);
out_kv:
	store_kv_close(s->kv);
out_fd:
	s->io->close(s->io, fd);
out_free:
	free(s);
	return rc;
}

static void part_closed(struct store *s)
{
	if (--s->pending_closes)
		return;
	void (*cb)(void *) = s->close_cb;
	void *arg = s->close_arg;
	for (size_t i = 0; i < MUT_BUCKETS; i++)
		while (s->muts[i]) { /* none expected: all mutations finished */
			struct store_mut *m = s->muts[i];
			s->muts[i] = m->next;
			free(m);
		}
	store_alloc_destroy(s->alloc);
	free(s);
	if (cb)
		cb(arg);
}

static void on_dev_closed(void *arg)
{
	part_closed(arg);
}

static void on_queue_closed(struct loop_queue *q)
{
	part_closed(container_of(q, struct store, q));
}

static void do_close(struct loop_work *w)
{
	struct store *s = container_of(w, struct store, close_work);
	/* Nothing in flight: the commit thread is idle, reads are done. */
	store_kv_close(s->kv);
	s->kv = NULL;
	s->reads_head = NULL;
	drain_deferred(s);
	s->pending_closes = 2;
	store_dev_close(s->dev, on_dev_closed, s);
	s->dev = NULL;
	loop_queue_close(&s->q, on_queue_closed);
}

static void maybe_close(struct store *s)
{
	if (!s->closing || s->inflight || s->close_posted)
		return;
	s->close_posted = true;
	/* Run from the loop queue, never from inside a dev or kv callback
	 * whose caller still uses the ring. */
	loop_queue_post(&s->q, &s->close_work, do_close);
}

static void finish_op(struct store *s)
{
	s->inflight--;
	maybe_close(s);
}

void store_close(struct store *s, void (*done_cb)(void *arg), void *arg)
{
	s->closing = true;
	s->close_cb = done_cb;
	s->close_arg = arg;
	maybe_close(s);
}

/* ------------------------------------------------------------ scrubber hooks */

struct store_kv *store_kv_of(struct store *s)
{
	return s->kv;
}

bool store_key_busy(struct store *s, const struct store_key *key)
{
	uint8_t k[STORE_KEY_LEN];
	store_key_encode(key, k);
	return mut_find(s, k) != NULL;
}

void store_note_bad(struct store *s)
{
	s->bad_present = true;
}

int store_next_pg(struct store *s, uint32_t from, uint32_t *pg)
{
	uint8_t start[5] = { STORE_KEY_NS, (uint8_t)(from >> 24), (uint8_t)(from >> 16),
			     (uint8_t)(from >> 8), (uint8_t)from };
	rocksdb_iterator_t *it = rocksdb_create_iterator(store_kv_db(s->kv), store_kv_ropts(s->kv));
	rocksdb_iter_seek(it, (const char *)start, sizeof(start));
	int rc = IOL_ENOT_FOUND;
	if (rocksdb_iter_valid(it)) {
		size_t kl;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
		if (kl >= 5 && k[0] == STORE_KEY_NS) {
			*pg = (uint32_t)k[1] << 24 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 8 | k[4];
			rc = 0;
		}
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	if (err) {
		free(err);
		rc = -EIO;
	}
	rocksdb_iter_destroy(it);
	return rc;
}
