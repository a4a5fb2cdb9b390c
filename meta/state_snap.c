/*
 * state_snap.c — the meta state's digest and snapshots: the digest every
 * member compares, export/import of the whole state (small states and
 * tests), RocksDB checkpoints and their install.
 *
 * Not here: fetching a checkpoint from a peer (meta/snap*.c), Raft's
 * snapshot policy (meta/node.c).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

/* ------------------------------------------------ digest and snapshots */

/* Walk every pair of one consistent view. */
static int for_each_pair(struct meta_state *s,
			 void (*fn)(void *arg, const char *k, size_t kn, const char *v, size_t vn),
			 void *arg)
{
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(ro, snap);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *k = rocksdb_iter_key(it, &kn);
		const char *v = rocksdb_iter_value(it, &vn);
		fn(arg, k, kn, v, vn);
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(s->db, snap);
	if (err) {
		fprintf(stderr, "meta/state: scan: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void digest_pair(void *arg, const char *k, size_t kn, const char *v, size_t vn)
{
	struct hash_stream *h = arg;
	uint8_t len[4];
	le32(len, (uint32_t)kn);
	hash_stream_update(h, len, 4);
	hash_stream_update(h, k, kn);
	le32(len, (uint32_t)vn);
	hash_stream_update(h, len, 4);
	hash_stream_update(h, v, vn);
}

int meta_state_digest(struct meta_state *s, uint8_t out[32])
{
	struct hash_stream *h = hash_stream_new(HASH_SHA256);
	if (!h)
		return -ENOMEM;
	int rc = for_each_pair(s, digest_pair, h);
	hash_stream_final(h, out);
	hash_stream_free(h);
	return rc;
}

struct export_ctx {
	uint8_t *buf;      /* NULL: sizing pass */
	size_t off;
	uint64_t count;
};

static void export_pair(void *arg, const char *k, size_t kn, const char *v, size_t vn)
{
	struct export_ctx *e = arg;
	if (e->buf) {
		le32(e->buf + e->off, (uint32_t)kn);
		le32(e->buf + e->off + 4, (uint32_t)vn);
		memcpy(e->buf + e->off + 8, k, kn);
		memcpy(e->buf + e->off + 8 + kn, v, vn);
	}
	e->off += 8 + kn + vn;
	e->count++;
}

int meta_state_export(struct meta_state *s, void *(*alloc)(size_t), void (*release)(void *),
		      uint8_t **out, size_t *len)
{
	/* One RocksDB snapshot for both passes, so size and bytes agree. */
	int rc = 0;
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(s->db);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_snapshot(ro, snap);
	struct export_ctx e = { .off = 16 };
	for (int pass = 0; pass < 2 && rc == 0; pass++) {
		if (pass == 1) {
			e.buf = alloc(e.off + SHA256_LEN);
			if (!e.buf) {
				rc = -ENOMEM;
				break;
			}
			memcpy(e.buf, SNAP_MAGIC, 8);
			for (int i = 0; i < 8; i++)
				e.buf[8 + i] = (uint8_t)(e.count >> (8 * i));
			e.off = 16;
			e.count = 0;
		}
		rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro);
		for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			size_t kn, vn;
			const char *k = rocksdb_iter_key(it, &kn);
			const char *v = rocksdb_iter_value(it, &vn);
			export_pair(&e, k, kn, v, vn);
		}
		char *err = NULL;
		rocksdb_iter_get_error(it, &err);
		rocksdb_iter_destroy(it);
		if (err) {
			fprintf(stderr, "meta/state: export: %s\n", err);
			rocksdb_free(err);
			rc = -EIO;
		}
	}
	if (rc == 0) {
		hash_sha256(e.buf, e.off, e.buf + e.off);
		*out = e.buf;
		*len = e.off + SHA256_LEN;
	} else if (e.buf) {
		release(e.buf);
	}
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(s->db, snap);
	return rc;
}

static int import_body(struct meta_state *s, const uint8_t *buf, size_t len)
{
	meta_state_apply_reset(s);
	if (len < 16 + SHA256_LEN || memcmp(buf, SNAP_MAGIC, 8) != 0)
		return IOL_ECORRUPT;
	uint8_t d[SHA256_LEN];
	hash_sha256(buf, len - SHA256_LEN, d);
	if (memcmp(d, buf + len - SHA256_LEN, SHA256_LEN) != 0)
		return IOL_ECORRUPT;
	uint64_t count = 0;
	for (int i = 7; i >= 0; i--)
		count = (count << 8) | buf[8 + i];
	size_t end = len - SHA256_LEN, off = 16;

	/* Validate the framing fully before touching the DB. */
	uint64_t seen = 0, applied = 0, gc = 0;
	uint64_t refs_at = UINT64_MAX;
	const char *fv = NULL, *lv = NULL;
	size_t fn = 0, ln = 0;
	while (off < end) {
		if (end - off < 8)
			return IOL_ECORRUPT;
		uint32_t kn = get_le32(buf + off), vn = get_le32(buf + off + 4);
		if ((uint64_t)kn + vn > end - off - 8)
			return IOL_ECORRUPT;
		if (kn == 1 && buf[off + 8] == 'A' && vn == 8)
			applied = get_be64((const char *)buf + off + 9);
		if (kn == 1 && buf[off + 8] == 'F') {
			fv = (const char *)buf + off + 9;
			fn = vn;
		}
		if (kn == 1 && buf[off + 8] == 'L') {
			lv = (const char *)buf + off + 9;
			ln = vn;
		}
		if (kn > 0 && buf[off + 8] == 'G')
			gc++;
		if (kn == 1 && buf[off + 8] == 'X' && vn == 8)
			refs_at = get_be64((const char *)buf + off + 9);
		off += 8 + (size_t)kn + vn;
		seen++;
	}
	if (seen != count)
		return IOL_ECORRUPT;
	uint32_t level;
	int rc = state_source_ok(s, "the imported state", fv, fn, lv, ln, &level);
	if (rc)
		return rc;

	/* One write: delete every current key, put every pair. */
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *k = rocksdb_iter_key(it, &kn);
		rocksdb_writebatch_delete(wb, k, kn);
	}
	rocksdb_iter_destroy(it);
	for (off = 16; off < end;) {
		uint32_t kn = get_le32(buf + off), vn = get_le32(buf + off + 4);
		rocksdb_writebatch_put(wb, (const char *)buf + off + 8, kn,
				       (const char *)buf + off + 8 + kn, vn);
		off += 8 + (size_t)kn + vn;
	}
	char *err = NULL;
	rocksdb_write(s->db, s->wo, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err) {
		fprintf(stderr, "meta/state: import: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	s->applied = applied;
	s->level_seen = level;
	atomic_store(&s->gc_entries, gc);
	/* A snapshot of a member without the reference index: build it here,
	 * as that member's own open will. */
	return refs_at == applied ? 0 : ref_build(s);
}

int meta_state_checkpoint(struct meta_state *s, const char *dir_out)
{
	char *err = NULL;
	rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(s->db, &err);
	if (!err)
		rocksdb_checkpoint_create(cp, dir_out, 0, &err);
	if (cp)
		rocksdb_checkpoint_object_destroy(cp);
	if (err) {
		fprintf(stderr, "meta/state: checkpoint %s: %s\n", dir_out, err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

int meta_state_checkpoint_applied(const char *dir, uint64_t *applied)
{
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_t *db = rocksdb_open_for_read_only(o, dir, 0, &err);
	int rc = 0;
	*applied = 0;
	if (!err) {
		size_t n = 0;
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		char *v = rocksdb_get(db, ro, "A", 1, &n, &err);
		rocksdb_readoptions_destroy(ro);
		if (v && n == 8)
			*applied = get_be64(v);
		rocksdb_free(v);
	}
	if (db)
		rocksdb_close(db);
	rocksdb_options_destroy(o);
	if (err) {
		fprintf(stderr, "meta/state: checkpoint %s: %s\n", dir, err);
		rocksdb_free(err);
		rc = -EIO;
	}
	return rc;
}

/* The marker of an install in progress: outside every table (tables are
 * one letter), and skipped by the install's own pass. */
#define INSTALL_KEY "~installing"
#define INSTALL_KEY_LEN (sizeof(INSTALL_KEY) - 1)

static int put_synced(struct meta_state *s, const char *k, size_t kn, const char *v, size_t vn,
		      bool del)
{
	char *err = NULL;
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(wo, 1);
	if (del)
		rocksdb_delete(s->db, wo, k, kn, &err);
	else
		rocksdb_put(s->db, wo, k, kn, v, vn, &err);
	rocksdb_writeoptions_destroy(wo);
	if (err) {
		fprintf(stderr, "meta/state: install marker: %s\n", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

int meta_state_install_pending(struct meta_state *s, char *tag, size_t cap)
{
	char *err = NULL;
	size_t n = 0;
	char *v = rocksdb_get(s->db, s->ro, INSTALL_KEY, INSTALL_KEY_LEN, &n, &err);
	if (err) {
		rocksdb_free(err);
		return -EIO;
	}
	if (!v)
		return 0;
	if (cap) {
		size_t k = n < cap - 1 ? n : cap - 1;
		memcpy(tag, v, k);
		tag[k] = 0;
	}
	rocksdb_free(v);
	return 1;
}

static int key_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int install_body(struct meta_state *s, const char *cp_dir, const char *tag,
			size_t batch_bytes)
{
	meta_state_apply_reset(s);
	if (!batch_bytes)
		batch_bytes = 4u << 20;
	char *err = NULL;
	rocksdb_options_t *co = rocksdb_options_create();
	/* A small cache of its own: one sequential pass, no reuse. */
	rocksdb_cache_t *cc = rocksdb_cache_create_lru(8u << 20);
	rocksdb_block_based_table_options_t *cb = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_cache(cb, cc);
	rocksdb_options_set_block_based_table_factory(co, cb);
	rocksdb_t *cp = rocksdb_open_for_read_only(co, cp_dir, 0, &err);
	int rc = 0;
	if (err) {
		fprintf(stderr, "meta/state: install: open %s: %s\n", cp_dir, err);
		rocksdb_free(err);
		err = NULL;
		rc = -EIO;
		goto out_opts;
	}
	size_t an = 0;
	char *av = rocksdb_get(cp, s->ro, "A", 1, &an, &err);
	uint64_t applied = av && an == 8 ? get_be64(av) : 0;
	rocksdb_free(av);
	if (err || !applied) {
		rc = err ? -EIO : IOL_ECORRUPT;
		rocksdb_free(err);
		err = NULL;
		goto out_cp;
	}
	/* A newer build's state (its format, or entries of an op level this
	 * build does not apply): refused before anything is written, so the
	 * member stops with its own state as it was. */
	size_t fn = 0, ln = 0;
	char *fmt = rocksdb_get(cp, s->ro, "F", 1, &fn, &err);
	char *lvl = err ? NULL : rocksdb_get(cp, s->ro, "L", 1, &ln, &err);
	uint32_t level = 0;
	rc = err ? -EIO : state_source_ok(s, cp_dir, fmt, fn, lvl, ln, &level);
	rocksdb_free(fmt);
	rocksdb_free(lvl);
	rocksdb_free(err);
	err = NULL;
	if (rc)
		goto out_cp;
	rc = put_synced(s, INSTALL_KEY, INSTALL_KEY_LEN, tag, strlen(tag), false);
	if (rc)
		goto out_cp;

	/* Both iterators pin their view when created: the live one sees the
	 * state before the batches below, so it never meets its own writes. */
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_fill_cache(ro, 0);
	rocksdb_iterator_t *li = rocksdb_create_iterator(s->db, ro);
	rocksdb_iterator_t *ci = rocksdb_create_iterator(cp, ro);
	rocksdb_iter_seek_to_first(li);
	rocksdb_iter_seek_to_first(ci);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	size_t pending = 0;
	uint64_t gc = 0, puts = 0, dels = 0;
	uint64_t refs_at = UINT64_MAX;
	while (rc == 0 && (rocksdb_iter_valid(li) || rocksdb_iter_valid(ci))) {
		size_t lkn = 0, ckn = 0, vn, lvn;
		const char *lk = rocksdb_iter_valid(li) ? rocksdb_iter_key(li, &lkn) : NULL;
		const char *ck = rocksdb_iter_valid(ci) ? rocksdb_iter_key(ci, &ckn) : NULL;
		if (lk && lkn == INSTALL_KEY_LEN && !memcmp(lk, INSTALL_KEY, lkn)) {
			rocksdb_iter_next(li);
			continue;
		}
		int c = !lk ? 1 : !ck ? -1 : key_cmp(lk, lkn, ck, ckn);
		if (c < 0) {   /* only here: gone from the source */
			rocksdb_writebatch_delete(wb, lk, lkn);
			pending += lkn + 16;
			dels++;
			rocksdb_iter_next(li);
			continue;
		}
		const char *v = rocksdb_iter_value(ci, &vn);
		if (ckn > 0 && ck[0] == 'G')
			gc++;
		if (ckn == 1 && ck[0] == 'X' && vn == 8)
			refs_at = get_be64(v);
		bool same = false;
		if (c == 0) {
			const char *lv = rocksdb_iter_value(li, &lvn);
			same = lvn == vn && !memcmp(lv, v, vn);
			rocksdb_iter_next(li);
		}
		if (!same) {
			rocksdb_writebatch_put(wb, ck, ckn, v, vn);
			pending += ckn + vn + 16;
			puts++;
		}
		rocksdb_iter_next(ci);
		if (pending >= batch_bytes) {
			rocksdb_write(s->db, s->wo, wb, &err);
			rocksdb_writebatch_clear(wb);
			pending = 0;
			if (err)
				rc = -EIO;
		}
	}
	if (rc == 0 && pending)
		rocksdb_write(s->db, s->wo, wb, &err);
	if (!err)
		rocksdb_iter_get_error(li, &err);
	if (!err)
		rocksdb_iter_get_error(ci, &err);
	if (err && rc == 0)
		rc = -EIO;
	rocksdb_writebatch_destroy(wb);
	rocksdb_iter_destroy(ci);
	rocksdb_iter_destroy(li);
	rocksdb_readoptions_destroy(ro);
	if (rc == 0) {
		/* The batches skipped the WAL: into files before the marker
		 * goes, so that a crash after it cannot lose them. */
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(s->db, fo, &err);
		rocksdb_flushoptions_destroy(fo);
		if (err)
			rc = -EIO;
	}
	if (err) {
		fprintf(stderr, "meta/state: install %s: %s\n", cp_dir, err);
		rocksdb_free(err);
		err = NULL;
	}
	if (rc == 0) {
		s->applied = applied;
		s->level_seen = level;
		atomic_store(&s->gc_entries, gc);
		if (refs_at != applied)
			rc = ref_build(s);
	}
	if (rc == 0)
		rc = put_synced(s, INSTALL_KEY, INSTALL_KEY_LEN, NULL, 0, true);
	if (rc == 0)
		fprintf(stderr, "meta/state: installed %s at %llu: %llu puts, %llu deletes\n", cp_dir,
			(unsigned long long)applied, (unsigned long long)puts,
			(unsigned long long)dels);
out_cp:
	rocksdb_close(cp);
out_opts:
	rocksdb_options_destroy(co);
	rocksdb_block_based_options_destroy(cb);
	rocksdb_cache_destroy(cc);
	return rc;
}

/* Import and install write the DB in more than one step (install in many
 * batches): a direct reader sees the write sequence odd throughout. */
int meta_state_import(struct meta_state *s, const uint8_t *buf, size_t len)
{
	wseq_enter(s);
	bucket_gen_move(s);   /* before: a slot filled before misses from here */
	int rc = import_body(s, buf, len);
	bucket_gen_move(s);   /* and after: a slot filled between two steps */
	wseq_leave(s);
	return rc;
}

int meta_state_install(struct meta_state *s, const char *cp_dir, const char *tag,
		       size_t batch_bytes)
{
	wseq_enter(s);
	bucket_gen_move(s);
	int rc = install_body(s, cp_dir, tag, batch_bytes);
	bucket_gen_move(s);   /* and after: a slot filled between two steps */
	wseq_leave(s);
	return rc;
}
