/*
 * state_gc.c — the shard GC queue ('G' u64 generation u16 seq) in the
 * meta state machine: what an op queues when it stops naming shards,
 * GcAck, the count kept at open, and the ListGc page.
 *
 * Not here: the worker that frees shards (gateway/gw_gc.c), the
 * reference index that CheckShards reads (state_ref.c).
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

/* Queue a replaced or deleted record's shards for GC (inline objects own
 * no shards; others name theirs by segments or by data_layout). */
void gc_record(struct tx *t, const Iolake__Meta__ObjectRecord *r)
{
	if (r->n_segments == 0 && r->data_layout.len == 0 && !r->part_rows)
		return;
	if (lock_gc_refuse(t, r))
		return;   /* object lock: never queued (state_lock.c) */
	Iolake__Meta__ObjectRecord copy = *r;
	copy.inline_data.len = 0;
	copy.inline_data.data = NULL;
	copy.n_user_meta = 0;
	/* Part rows (state_prows.c): the entry names the version (bucket,
	 * key, upload id), not its 10,000-part summary; FreePartRows frees
	 * the rows in batches. */
	copy.n_part_list = 0;
	copy.part_list = NULL;
	struct key k;
	key_gc(&k, t->gen, t->gc_seq);
	t->gc_seq++;
	t->gc_added++;
	tx_put_msg(t, &k, &copy.base);
}

void gc_part(struct tx *t, const char *bucket, const char *key,
		    const Iolake__Meta__Part *p)
{
	if (!p->segment)
		return;
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	Iolake__Meta__Segment *segs[1] = { p->segment };
	r.bucket = (char *)bucket;
	r.key = (char *)key;
	r.size = p->size;
	r.n_segments = 1;
	r.segments = segs;
	gc_record(t, &r);
}

/* Acks are idempotent: an entry already gone (acked by another gateway's
 * worker, or twice in one batch) is skipped, so gc_removed counts only
 * what this entry really deleted.
 *
 * A whole generation's entries are found with one iterator over the
 * batch and the DB (a Seek per generation), their keys kept, and deleted
 * once the iterator is gone: RocksDB does not allow writing the batch's
 * current key while an iterator over it is open. */
int op_gc_ack(struct tx *t, const Iolake__Meta__GcAck *op)
{
	struct gc_at {
		uint64_t gen;
		uint16_t seq;
	} *found = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	rocksdb_iterator_t *it = NULL;
	for (size_t i = 0; i < op->n_generations && !rc; i++) {
		bool again = false;   /* named twice: its keys are found once */
		for (size_t j = 0; j < i && !again; j++)
			again = op->generations[j] == op->generations[i];
		if (again)
			continue;
		struct key prefix;
		k_init(&prefix, 'G');
		k_u64(&prefix, op->generations[i]);
		if (!it)
			it = tx_iter(t, &prefix);
		else
			rocksdb_iter_seek(it, prefix.b, prefix.n);
		for (; iter_has_prefix(it, &prefix); rocksdb_iter_next(it)) {
			size_t kn;
			const uint8_t *kb = (const uint8_t *)rocksdb_iter_key(it, &kn);
			if (kn != prefix.n + 2)
				continue;   /* not a key_gc key: none is written under 'G' */
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct gc_at *nf = realloc(found, nc * sizeof(*nf));
				if (!nf) {
					rc = -ENOMEM;
					break;
				}
				found = nf;
				cap = nc;
			}
			found[n].gen = op->generations[i];
			found[n].seq = (uint16_t)(kb[prefix.n] << 8 | kb[prefix.n + 1]);
			n++;
		}
	}
	if (it)
		rocksdb_iter_destroy(it);
	for (size_t i = 0; i < n && !rc; i++) {
		struct key k;
		key_gc(&k, found[i].gen, found[i].seq);
		tx_del(t, &k);
		t->gc_removed++;
	}
	free(found);
	if (rc)
		return rc;
	for (size_t i = 0; i < op->n_entries; i++) {
		const Iolake__Meta__GcKey *e = op->entries[i];
		if (e->seq > UINT16_MAX)
			continue;   /* no such key can exist */
		struct key k;
		key_gc(&k, e->generation, (uint16_t)e->seq);
		if (tx_exists(t, &k)) {
			tx_del(t, &k);
			t->gc_removed++;
		}
	}
	return 0;
}

/* Entries under 'G' (at open; applies keep the count after). */
uint64_t gc_scan(struct meta_state *s)
{
	uint64_t n = 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, "G", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'G')
			break;
		n++;
	}
	rocksdb_iter_destroy(it);
	return n;
}

int meta_state_gc_count(struct meta_state *s, uint64_t *n)
{
	*n = atomic_load(&s->gc_entries);
	return 0;
}

int meta_state_list_gc(struct meta_state *s, uint64_t after_gen, uint32_t after_seq,
		       uint32_t max, Iolake__Meta__GcEntry ***out, size_t *n_out, bool *truncated)
{
	if (max == 0 || max > META_LIST_GC_MAX)
		max = META_LIST_GC_MAX;
	/* Seek to the cursor itself and step over it when it is still there:
	 * a cursor past UINT16_MAX seqs starts at the next generation. */
	struct key lo;
	bool skip_lo = after_gen || after_seq;
	if (after_seq > UINT16_MAX) {
		key_gc(&lo, after_gen + 1, 0);
		skip_lo = false;
	} else {
		key_gc(&lo, after_gen, (uint16_t)after_seq);
	}
	ProtobufCMessage **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	*truncated = false;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, lo.b, lo.n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'G')
			break;
		if (kn != lo.n) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (skip_lo && memcmp(kb, lo.b, kn) == 0)
			continue;   /* the cursor: returned by the previous page */
		if (n == max) {
			*truncated = true;
			break;
		}
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GcEntry *e = malloc(sizeof(*e));
		if (!e) {
			rc = -ENOMEM;
			break;
		}
		iolake__meta__gc_entry__init(e);
		e->generation = get_be64(kb + 1);
		e->seq = (uint32_t)(uint8_t)kb[9] << 8 | (uint8_t)kb[10];
		e->record = iolake__meta__object_record__unpack(NULL, vn, (const uint8_t *)vb);
		if (!e->record) {
			free(e);
			rc = IOL_ECORRUPT;
			break;
		}
		if ((rc = push_msg(&v, &n, &cap, &e->base)))
			break;   /* push_msg freed e */
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		free_msgs(v, n);
		return rc;
	}
	*out = (Iolake__Meta__GcEntry **)v;
	*n_out = n;
	return 0;
}
