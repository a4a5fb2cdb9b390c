/*
 * state_prows.c — multipart part rows (issue 18; docs/architecture.md
 * "Multipart records"): where an upload's parts live so that an object of
 * 10,000 parts of 5 GiB (5 TiB) never needs its layouts in one record.
 *
 *   'p' bucket 0x00 key 0x00 be64(upload generation) be32(part) -> Part
 *
 * An upload created with MultipartUpload.part_rows (every gateway's
 * CreateMultipartUpload asks for it) keeps its parts here from PutPart on; CompleteMultipart leaves the parts it
 * names where they are and writes a record with part_rows set, a per-part
 * summary (part_list: number, size, checksum) and no segments, so the
 * record costs ~10-50 bytes a part whatever the parts' sizes. Readers
 * fetch the rows of the parts they need (meta_state_list_part_rows, the
 * GetPartRows RPC). The rows sort under their key, so a range move
 * carries them like any per-key table (state_move.c MOVE_TABLES), and a
 * noncurrent version (state_ver.c moves records, never rewrites them)
 * keeps naming its rows until it is deleted.
 *
 * Invariant: a row holds the shard references ('X') of its part while it
 * exists, whether an upload or a record names it; a record with part_rows
 * references nothing itself. When such a record stops being named (gc_record
 * queues it without its part_list), the GC worker turns its rows into
 * ordinary GC entries in bounded batches (FreePartRows: up to 256 rows and
 * ~1 MiB of layouts become one entry of their segments), never all at
 * once.
 *
 * Not here: the multipart ops themselves (state.c / state_obj.c), the
 * older 'P' upload_id table (uploads from before part rows keep it, and
 * their Complete copies the layouts into the record as it did).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

#define FREE_ROWS_MAX 256
#define FREE_BYTES_MAX (1u << 20)      /* layouts queued by one FreePartRows */
#define LIST_BYTES_MAX (4u << 20)      /* rows in one GetPartRows answer */
#define LIST_ROWS_MAX 1000

/* 16 lowercase hex digits into *gen; false otherwise. */
static bool upload_gen(const char *id, uint64_t *gen)
{
	uint64_t v = 0;
	if (!id || strlen(id) != 16)
		return false;
	for (int i = 0; i < 16; i++) {
		char c = id[i];
		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return false;
	}
	*gen = v;
	return true;
}

bool key_part_rows(struct key *k, const char *bucket, const char *key, const char *upload_id)
{
	uint64_t gen;
	if (!valid_bucket(bucket) || !valid_key(key) || !upload_gen(upload_id, &gen))
		return false;
	k_init(k, 'p');
	k_str(k, bucket);
	k_byte(k, 0);
	k_str(k, key);
	k_byte(k, 0);
	k_u64(k, gen);
	return true;
}

bool key_part_row(struct key *k, const char *bucket, const char *key, const char *upload_id,
		  uint32_t part)
{
	if (!key_part_rows(k, bucket, key, upload_id))
		return false;
	k_u32(k, part);
	return true;
}

void mpu_part_key(struct key *k, const Iolake__Meta__MultipartUpload *u, const char *bucket,
		  const char *key, const char *upload_id, uint32_t part)
{
	if (u->part_rows)
		key_part_row(k, bucket, key, upload_id, part);
	else
		key_part(k, upload_id, part);
}

void mpu_parts_prefix(struct key *k, const Iolake__Meta__MultipartUpload *u, const char *bucket,
		      const char *key, const char *upload_id)
{
	if (u->part_rows) {
		key_part_rows(k, bucket, key, upload_id);
	} else {
		k_init(k, 'P');
		k_str(k, upload_id);
	}
}

/* Whether a stored record (value v[0..n)) names upload_id: its field 41
 * (upload_id: tag 0xca 0x02, length 16) holds those 16 bytes. Scanned,
 * not unpacked (a version of 10,000 parts carries a ~0.5 MB summary); a
 * false match only keeps rows, never frees them. */
static bool names_upload(const char *v, size_t n, const char *upload_id)
{
	char pat[19] = { (char)0xca, 0x02, 16 };
	memcpy(pat + 3, upload_id, 16);
	return memmem(v, n, pat, sizeof(pat)) != NULL;
}

/* Whether the key's current record, one of its older versions or an open
 * upload names upload_id's rows (then they are not garbage). One get, one
 * bounded walk of the key's versions, one existence check. */
static int rows_live(struct tx *t, const char *bucket, const char *key, const char *upload_id,
		     bool *live)
{
	struct key k;
	char *v = NULL;
	size_t vn = 0;
	*live = false;
	key_object(&k, bucket, key);
	int rc = tx_get(t, &k, &v, &vn);
	if (rc && rc != IOL_ENOT_FOUND)
		return rc;
	if (rc == 0) {
		*live = names_upload(v, vn, upload_id);
		rocksdb_free(v);
	}
	key_upload(&k, bucket, key, upload_id);
	if (!*live && tx_exists(t, &k))
		*live = true;
	struct key vp;   /* 'V' bucket 0x00 key 0x00: the key's older versions */
	k_init(&vp, 'V');
	k_str(&vp, bucket);
	k_byte(&vp, 0);
	k_str(&vp, key);
	k_byte(&vp, 0);
	rocksdb_iterator_t *it = *live ? NULL : tx_iter(t, &vp);
	for (; it && !*live && iter_has_prefix(it, &vp); rocksdb_iter_next(it)) {
		const char *vb = rocksdb_iter_value(it, &vn);
		*live = names_upload(vb, vn, upload_id);
	}
	if (it)
		rocksdb_iter_destroy(it);
	return 0;
}

int op_free_part_rows(struct tx *t, const Iolake__Meta__FreePartRows *op,
		      struct meta_op_result *r)
{
	struct key pre;
	if (!op->bucket || !op->key || !key_part_rows(&pre, op->bucket, op->key, op->upload_id))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	bool live;
	int rc = rows_live(t, op->bucket, op->key, op->upload_id, &live);
	if (rc)
		return rc;
	if (live)
		return IOL_ECONFLICT;
	uint32_t max = op->max_rows && op->max_rows < FREE_ROWS_MAX ? op->max_rows : FREE_ROWS_MAX;
	uint32_t nums[FREE_ROWS_MAX];
	Iolake__Meta__Part *parts[FREE_ROWS_MAX];
	uint32_t n = 0;
	size_t bytes = 0;
	bool more = false;
	/* Read first, write after: no writes under a live iterator. */
	rocksdb_iterator_t *it = tx_iter(t, &pre);
	for (; iter_has_prefix(it, &pre); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn != pre.n + 4)
			continue;
		if (n == max || bytes >= FREE_BYTES_MAX) {
			more = true;
			break;
		}
		const char *vb = rocksdb_iter_value(it, &vn);
		parts[n] = iolake__meta__part__unpack(NULL, vn, (const uint8_t *)vb);
		if (!parts[n]) {
			rc = -EIO;   /* a row apply wrote does not decode */
			break;
		}
		const uint8_t *nb = (const uint8_t *)kb + pre.n;
		nums[n++] = (uint32_t)nb[0] << 24 | (uint32_t)nb[1] << 16 | (uint32_t)nb[2] << 8 | nb[3];
		bytes += vn;
	}
	rocksdb_iter_destroy(it);
	/* The batch becomes ONE GC entry: a record of the rows' segments (at
	 * most 256 and ~1 MiB of layouts), which the worker frees as it frees
	 * a multipart record of the older form, a round at a time. */
	Iolake__Meta__Segment *segs = NULL, **segp = NULL;
	if (!rc && n && (!(segs = calloc(n, sizeof(*segs))) || !(segp = calloc(n, sizeof(*segp)))))
		rc = -ENOMEM;
	Iolake__Meta__ObjectRecord q = IOLAKE__META__OBJECT_RECORD__INIT;
	q.bucket = (char *)op->bucket;
	q.key = (char *)op->key;
	q.upload_id = (char *)op->upload_id;
	for (uint32_t i = 0; !rc && i < n; i++) {
		struct key k;
		if (parts[i]->segment) {
			segs[q.n_segments] = *parts[i]->segment;
			segs[q.n_segments].offset = q.size;
			segp[q.n_segments] = &segs[q.n_segments];
			q.n_segments++;
			q.size += parts[i]->segment->length;
		}
		ref_part(t, parts[i], false);
		key_part_row(&k, op->bucket, op->key, op->upload_id, nums[i]);
		tx_del(t, &k);
	}
	q.segments = segp;
	q.parts_count = n;
	if (!rc && q.n_segments)
		gc_record(t, &q);
	free(segp);
	free(segs);
	for (uint32_t i = 0; i < n; i++)
		meta_state_free_msg(parts[i]);
	if (rc) {
		t->io_err = rc;
		return rc;
	}
	r->part_rows_more = more;
	return 0;
}

int meta_state_list_part_rows(struct meta_state *s, const char *bucket, const char *key,
			      const char *upload_id, uint32_t marker, uint32_t max, bool no_layouts,
			      Iolake__Meta__Part ***out, size_t *n_out, bool *truncated)
{
	struct key pre, lo;
	*out = NULL;
	*n_out = 0;
	*truncated = false;
	if (!key_part_rows(&pre, bucket, key, upload_id))
		return -EINVAL;
	uint32_t cap_rows = no_layouts ? META_PARTS_MAX : LIST_ROWS_MAX;
	if (max == 0 || max > cap_rows)
		max = cap_rows;
	lo = pre;
	k_u32(&lo, marker + 1);
	if (marker >= META_PARTS_MAX)
		return 0;
	Iolake__Meta__Part **v = calloc(max, sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t n = 0, bytes = 0;
	int rc = 0;
	struct key end;
	rocksdb_readoptions_t *ro = prefix_ro(&pre, &end);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	for (rocksdb_iter_seek(it, lo.b, lo.n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < pre.n || memcmp(kb, pre.b, pre.n))
			break;
		if (n == max || (!no_layouts && bytes >= LIST_BYTES_MAX)) {
			*truncated = true;
			break;
		}
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__Part *p = iolake__meta__part__unpack(NULL, vn, (const uint8_t *)vb);
		if (!p) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (no_layouts && p->segment && p->segment->data_layout.len) {
			/* A listing of 10,000 parts of 5 GiB stays ~1 MB, not
			 * 1.2 GB: names, sizes, ETags and checksums only. */
			free(p->segment->data_layout.data);
			p->segment->data_layout.data = NULL;
			p->segment->data_layout.len = 0;
		}
		v[n++] = p;
		bytes += vn;
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			meta_state_free_msg(v[i]);
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int meta_state_get_part_row(struct meta_state *s, const char *bucket, const char *key,
			    const char *upload_id, uint32_t part_number, Iolake__Meta__Part **out)
{
	struct key k;
	if (!key_part_row(&k, bucket, key, upload_id, part_number))
		return -EINVAL;
	return read_msg(s, &k, &iolake__meta__part__descriptor, (void **)out);
}
