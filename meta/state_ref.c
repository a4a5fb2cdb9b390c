/*
 * state_ref.c — the shard reference index ('X' pg id gen) of the meta
 * state machine: kept by apply beside the records, rebuilt from the 'O'
 * and 'P' tables when absent, read by CheckShards.
 *
 * Not here: the records themselves (state_obj.c, state_mpu.c,
 * state_ver.c).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"
#include "meta/wire.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

/* ---------------------------------------------------- reference index
 *
 * 'X' pg id gen -> "" for every live reference to the shards of a gw_data
 * PUT: gen is the generation of the record (ObjectRecord.data_layout, each
 * Segment.data_layout) or part (Part.segment) that names it. Put in the
 * same batch as the record where an op starts naming a layout, deleted
 * where it stops (the places that queue GC entries), blindly: the record
 * and its generation say which key, so apply reads nothing more. The
 * index is a pure function of the 'O' and 'P' tables (ref_build computes
 * it from them, for a state written before it existed). An id is
 * referenced while any key has the prefix 'X' pg id: CheckShards.
 */

/* The pg and 16-byte object id of an encoded layout (layout.proto fields
 * 7 and 6), scanned without unpacking (no allocation in apply). false: not
 * a layout whose shards can be named (corrupt, or an id of another size). */
bool meta_layout_ref(const uint8_t *p, size_t n, uint32_t *pg, uint8_t id[META_REF_ID_LEN])
{
	const uint8_t *end = p + n;
	struct meta_wire_field f;
	bool have_id = false;
	*pg = 0;
	while (p < end) {
		if (!meta_wire_next(&p, end, &f))
			return false;
		if (f.num == 7 && f.type == 0)
			*pg = (uint32_t)f.varint;
		if (f.num == 6 && f.type == 2) {
			if (f.len != META_REF_ID_LEN)
				return false;
			memcpy(id, f.data, META_REF_ID_LEN);
			have_id = true;
		}
	}
	return have_id;
}

static void key_ref(struct key *k, uint32_t pg, const uint8_t *id)
{
	k_init(k, 'X');
	k_u32(k, pg);
	memcpy(k->b + k->n, id, META_REF_ID_LEN);
	k->n += META_REF_ID_LEN;
}

/* Add (or drop) the reference of the record or part of generation gen to
 * one layout's shards. A layout that names no shards (undecodable) is not
 * indexed: the gateway cannot read it either. */
static void ref_layout(struct tx *t, const ProtobufCBinaryData *lay, uint64_t gen, bool add)
{
	uint32_t pg;
	uint8_t id[META_REF_ID_LEN];
	if (lay->len == 0 || !meta_layout_ref(lay->data, lay->len, &pg, id))
		return;
	struct key k;
	key_ref(&k, pg, id);
	k_u64(&k, gen);
	if (add)
		rocksdb_writebatch_wi_put(t->wb, k.b, k.n, "", 0);
	else
		tx_del(t, &k);
}

void ref_record(struct tx *t, const Iolake__Meta__ObjectRecord *r, uint64_t gen, bool add)
{
	ref_layout(t, &r->data_layout, gen, add);
	for (size_t i = 0; i < r->n_segments; i++)
		ref_layout(t, &r->segments[i]->data_layout, gen, add);
}

void ref_part(struct tx *t, const Iolake__Meta__Part *p, bool add)
{
	if (p->segment)
		ref_layout(t, &p->segment->data_layout, p->generation, add);
}

/* Build the reference index from the 'O' and 'P' tables, replacing any
 * 'X' keys, and mark it current ("X" = the applied index), in one write.
 * For a state written before the index existed, or last applied by a
 * binary that did not keep it (open, import): every member derives the
 * same keys from the same records. Memory: one batch of all the index keys
 * (~30 bytes per live layout), once. 0, -EIO, -ENOMEM. */
int ref_build(struct meta_state *s)
{
	struct tx t = { .s = s };
	t.wb = rocksdb_writebatch_wi_create(0, 1);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, "X", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn == 0 || kb[0] != 'X')
			break;
		rocksdb_writebatch_wi_delete(t.wb, kb, kn);
	}
	uint64_t records = 0;
	for (const char *tab = "OPVp"; *tab && !t.io_err; tab++) {
		for (rocksdb_iter_seek(it, tab, 1); rocksdb_iter_valid(it) && !t.io_err;
		     rocksdb_iter_next(it)) {
			size_t kn, vn;
			const char *kb = rocksdb_iter_key(it, &kn);
			if (kn == 0 || kb[0] != *tab)
				break;
			const uint8_t *vb = (const uint8_t *)rocksdb_iter_value(it, &vn);
			if (*tab != 'P' && *tab != 'p') {   /* 'O' and 'V': object versions */
				Iolake__Meta__ObjectRecord *r =
					iolake__meta__object_record__unpack(NULL, vn, vb);
				if (!r) {
					t.io_err = IOL_ECORRUPT;
					break;
				}
				ref_record(&t, r, r->generation, true);
				meta_state_free_msg(r);
			} else {
				Iolake__Meta__Part *pt = iolake__meta__part__unpack(NULL, vn, vb);
				if (!pt) {
					t.io_err = IOL_ECORRUPT;
					break;
				}
				ref_part(&t, pt, true);
				meta_state_free_msg(pt);
			}
			records++;
		}
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		rocksdb_free(err);
		t.io_err = -EIO;
	}
	int rc = t.io_err;
	if (rc == 0) {
		char v[8];
		put_be64(v, s->applied);
		rocksdb_writebatch_wi_put(t.wb, "X", 1, v, 8);
		rc = write_batch(s, t.wb, false);   /* 'X' rows only */
	}
	rocksdb_writebatch_wi_destroy(t.wb);
	if (rc == 0 && records)
		fprintf(stderr, "meta/state: built the shard reference index from %llu records\n",
			(unsigned long long)records);
	return rc;
}

int meta_state_check_refs(struct meta_state *s, uint32_t pg, const uint8_t *const *ids,
			  size_t n, bool *referenced)
{
	if (n > META_CHECK_SHARDS_MAX)
		return -EINVAL;
	if (n == 0)
		return 0;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	for (size_t i = 0; i < n; i++) {
		struct key k;
		key_ref(&k, pg, ids[i]);
		rocksdb_iter_seek(it, k.b, k.n);
		referenced[i] = iter_has_prefix(it, &k);
	}
	char *err = NULL;
	rocksdb_iter_get_error(it, &err);
	rocksdb_iter_destroy(it);
	if (err) {
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}
