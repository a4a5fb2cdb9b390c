/*
 * state_mpu.c — multipart uploads in the meta state machine:
 * CreateMultipart, PutPart, CompleteMultipart, AbortMultipart.
 *
 * Where parts live: an upload created with part_rows (every gateway asks)
 * keeps them as rows under its key, which its Complete leaves in place
 * and its object names (state_prows.c: keys, FreePartRows, the reads); an
 * older upload keeps them under 'P' upload_id and its Complete copies
 * their layouts into the record's segments.
 *
 * Not here: the object record Complete writes is counted and versioned
 * through state_ver.c; replaced parts are queued for GC by state_gc.c.
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

int op_create_multipart(struct tx *t, Iolake__Meta__CreateMultipart *op,
			       struct meta_op_result *r)
{
	Iolake__Meta__MultipartUpload *u = op->upload;
	if (!u || !valid_bucket(u->bucket) || !valid_key(u->key) ||
	    (unsigned)u->checksum_algo > IOLAKE__META__CHECKSUM_ALGO__CHECKSUM_CRC64NVME)
		return -EINVAL;
	int rrc = range_check(t, u->bucket, u->key);
	if (rrc)
		return rrc;
	range_count(t, 0, 0, 1);
	snprintf(r->upload_id, sizeof(r->upload_id), "%016llx", (unsigned long long)t->gen);
	char *client_id = u->upload_id;   /* whatever the proposer sent is ignored */
	u->upload_id = r->upload_id;
	struct key k;
	key_upload(&k, u->bucket, u->key, r->upload_id);
	int rc = tx_put_msg(t, &k, &u->base);
	u->upload_id = client_id;         /* the batch's free_unpacked owns it */
	return rc;
}

static int get_upload(struct tx *t, const char *bucket, const char *key, const char *id,
		      Iolake__Meta__MultipartUpload **u)
{
	if (!valid_bucket(bucket) || !valid_key(key) || !valid_upload_id(id))
		return -EINVAL;
	if (t->range_id) {
		int rc = range_check(t, bucket, key);
		if (rc)
			return rc;
	}
	struct key k;
	key_upload(&k, bucket, key, id);
	return tx_get_msg(t, &k, &iolake__meta__multipart_upload__descriptor, (void **)u);
}

int op_put_part(struct tx *t, const Iolake__Meta__PutPart *op)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__Part *old = NULL;
	if (!op->part || op->part->part_number < 1 || op->part->part_number > META_PARTS_MAX)
		return -EINVAL;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	struct key k;
	mpu_part_key(&k, u, op->bucket, op->key, op->upload_id, op->part->part_number);
	rc = tx_get_msg(t, &k, &iolake__meta__part__descriptor, (void **)&old);
	if (rc && rc != IOL_ENOT_FOUND)
		goto out;
	/* The gateway frees a replaced part's shards: it names the part it
	 * replaces (its generation), so two racing uploads of one part
	 * number cannot both believe they replaced the same one. */
	if (op->conditional && (old ? old->generation : 0) != op->if_generation) {
		rc = IOL_ECONFLICT;
		goto out;
	}
	if (old) {
		gc_part(t, op->bucket, op->key, old);   /* re-uploaded part */
		ref_part(t, old, false);
	}
	Iolake__Meta__Part p = *op->part;
	p.upload_id = op->upload_id;
	p.generation = t->gen;
	ref_part(t, &p, true);
	rc = tx_put_msg(t, &k, &p.base);
	if (rc == 0) {
		/* Complete and Abort may require the parts unchanged since
		 * their caller listed them. */
		struct key uk;
		key_upload(&uk, op->bucket, op->key, op->upload_id);
		u->parts_generation = t->gen;
		rc = tx_put_msg(t, &uk, &u->base);
	}
out:
	meta_state_free_msg(old);
	meta_state_free_msg(u);
	return rc;
}

/* Delete an upload's parts, GC those not in keep (sorted part numbers).
 * With part rows (u->part_rows) the kept ones stay: the object names them. */
static void drop_parts(struct tx *t, const Iolake__Meta__MultipartUpload *u, const char *bucket,
		       const char *key, const char *id, const uint32_t *keep, size_t n_keep)
{
	struct key prefix;
	mpu_parts_prefix(&prefix, u, bucket, key, id);
	rocksdb_iterator_t *it = tx_iter(t, &prefix);
	size_t j = 0;
	for (; iter_has_prefix(it, &prefix); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		const char *vb = rocksdb_iter_value(it, &vn);
		struct key k;
		memcpy(k.b, kb, kn);
		k.n = kn;
		const uint8_t *nb = (const uint8_t *)kb + kn - 4;
		uint32_t num = (uint32_t)nb[0] << 24 | (uint32_t)nb[1] << 16 | (uint32_t)nb[2] << 8 | nb[3];
		while (j < n_keep && keep[j] < num)
			j++;
		bool kept = j < n_keep && keep[j] == num;
		if (!kept) {
			Iolake__Meta__Part *p =
				iolake__meta__part__unpack(NULL, vn, (const uint8_t *)vb);
			if (p) {
				gc_part(t, bucket, key, p);
				ref_part(t, p, false);
			}
			meta_state_free_msg(p);
		}
		if (!kept || !u->part_rows)
			tx_del(t, &k);
	}
	rocksdb_iter_destroy(it);
}

int op_complete_multipart(struct tx *t, const Iolake__Meta__CompleteMultipart *op,
				 struct meta_op_result *r)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__ObjectRecord *cur = NULL;
	Iolake__Meta__Part **parts = NULL;
	Iolake__Meta__Segment *segs = NULL, **segp = NULL;
	uint32_t *nums = NULL;
	uint8_t *md5s = NULL;
	Iolake__Meta__ObjectPart *ops = NULL, **opp = NULL;
	struct {
		Iolake__Meta__Checksum c;
		uint8_t v[32];
	} *cks = NULL;
	size_t n = op->n_parts;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	if (op->parts_conditional && u->parts_generation != op->if_parts_generation) {
		rc = IOL_ECONFLICT;
		goto out;
	}
	if (n == 0 || n > META_PARTS_MAX) {
		rc = -EINVAL;
		goto out;
	}
	parts = calloc(n, sizeof(*parts));
	segs = calloc(n, sizeof(*segs));
	segp = calloc(n, sizeof(*segp));
	nums = calloc(n, sizeof(*nums));
	md5s = calloc(n, MD5_LEN);
	ops = calloc(n, sizeof(*ops));
	opp = calloc(n, sizeof(*opp));
	if (!parts || !segs || !segp || !nums || !md5s || !ops || !opp) {
		rc = -ENOMEM;
		t->io_err = -ENOMEM;
		goto out;
	}
	/* Order first (S3 InvalidPartOrder), before any part is looked at. */
	for (size_t i = 0; i < n; i++) {
		nums[i] = op->parts[i]->part_number;
		if (nums[i] < 1 || nums[i] > META_PARTS_MAX || (i > 0 && nums[i] <= nums[i - 1])) {
			rc = -EINVAL;
			goto out;
		}
	}
	uint64_t off = 0;
	size_t n_segs = 0;
	/* Part rows: the layouts stay in the rows; the record keeps a summary
	 * (number, size, checksum) of every part. A part is let go once read
	 * (its checksum copied), so 10,000 parts of 5 GiB (123 KB of layout
	 * each) never sit in memory together. */
	bool rows = u->part_rows;
	if (rows && !(cks = calloc(n, sizeof(*cks)))) {
		rc = -ENOMEM;
		t->io_err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__PartRef *ref = op->parts[i];
		struct key k;
		mpu_part_key(&k, u, op->bucket, op->key, op->upload_id, ref->part_number);
		rc = tx_get_msg(t, &k, &iolake__meta__part__descriptor, (void **)&parts[i]);
		if (rc == IOL_ENOT_FOUND || (rc == 0 && (strcmp(parts[i]->etag, ref->etag) != 0 ||
					     strlen(ref->etag) != 32 ||
					     hash_unhex(ref->etag, MD5_LEN, md5s + i * MD5_LEN))))
			rc = META_EINVALID_PART;
		if (rc)
			goto out;
		if (parts[i]->segment && !rows) {
			segs[n_segs] = *parts[i]->segment;
			segs[n_segs].offset = off;
			segs[n_segs].part_number = ref->part_number;
			segp[n_segs] = &segs[n_segs];
			n_segs++;
		}
		off += parts[i]->size;
		/* An upload with a checksum algorithm keeps each part's. */
		iolake__meta__object_part__init(&ops[i]);
		ops[i].part_number = ref->part_number;
		ops[i].size = parts[i]->size;
		for (size_t c = 0; c < parts[i]->n_checksums; c++)
			if (parts[i]->checksums[c]->algo == u->checksum_algo)
				ops[i].checksum = parts[i]->checksums[c];
		opp[i] = &ops[i];
		if (rows) {
			if (ops[i].checksum && ops[i].checksum->value.len <= sizeof(cks[i].v)) {
				cks[i].c = *ops[i].checksum;
				memcpy(cks[i].v, cks[i].c.value.data, cks[i].c.value.len);
				cks[i].c.value.data = cks[i].v;
				ops[i].checksum = &cks[i].c;
			} else {
				ops[i].checksum = NULL;
			}
			meta_state_free_msg(parts[i]);
			parts[i] = NULL;
		}
	}
	struct key ok;
	key_object(&ok, op->bucket, op->key);
	rc = check_condition(t, &ok, op->if_none_match, op->if_generation, &cur);
	if (rc)
		goto out;

	/* S3's multipart ETag: MD5 of the parts' binary MD5s, "-N". */
	uint8_t d[MD5_LEN];
	char hex[2 * MD5_LEN + 1];
	hash_md5(md5s, n * MD5_LEN, d);
	hash_hex(d, MD5_LEN, hex);
	snprintf(r->etag, sizeof(r->etag), "%s-%zu", hex, n);

	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	if (u->meta)
		rec = *u->meta;   /* headers, user metadata, pg, layout */
	rec.bucket = op->bucket;
	rec.key = op->key;
	rec.generation = t->gen;
	rec.size = off;
	rec.etag = r->etag;
	rec.mtime_ms = op->time_ms;
	rec.parts_count = (uint32_t)n;
	rec.n_segments = n_segs;
	rec.segments = segp;
	rec.inline_data.len = 0;
	rec.inline_data.data = NULL;
	rec.n_checksums = 0;
	rec.checksums = NULL;
	/* The object's checksum, when of the upload's algorithm and of its
	 * length (4 CRC32/CRC32C, 20 SHA1, 32 SHA256, 8 CRC64NVME). */
	static const size_t ck_len[] = { 0, 4, 4, 20, 32, 8 };
	Iolake__Meta__Checksum *ckp = op->checksum;
	if (ckp && u->checksum_algo && ckp->algo == u->checksum_algo &&
	    (unsigned)ckp->algo < sizeof(ck_len) / sizeof(ck_len[0]) &&
	    ckp->value.len == ck_len[ckp->algo]) {
		rec.n_checksums = 1;
		rec.checksums = &ckp;
	}
	rec.upload_id = op->upload_id;
	rec.n_part_list = u->checksum_algo || rows ? n : 0;
	rec.part_list = opp;
	rec.part_rows = rows;
	/* First, as it may refuse before writing anything (object lock: a
	 * held version the object would free; state_lock.c). */
	rc = meta_ver_put_current(t, &ok, &rec, cur, r);
	if (rc)
		goto out;
	range_count(t, 0, 0, -1);   /* the upload; meta_ver_put_current counts the object */
	/* The kept parts' layouts move into the object: the parts stop
	 * naming them (drop_parts handles the others), the object starts.
	 * Part rows keep naming theirs. */
	for (size_t i = 0; i < n && !rows; i++)
		ref_part(t, parts[i], false);
	drop_parts(t, u, op->bucket, op->key, op->upload_id, nums, n);
	struct key uk;
	key_upload(&uk, op->bucket, op->key, op->upload_id);
	tx_del(t, &uk);
out:
	if (parts)
		for (size_t i = 0; i < n; i++)
			meta_state_free_msg(parts[i]);
	free(cks);
	free(opp);
	free(ops);
	free(md5s);
	free(nums);
	free(segp);
	free(segs);
	free(parts);
	meta_state_free_msg(cur);
	meta_state_free_msg(u);
	return rc;
}

int op_abort_multipart(struct tx *t, const Iolake__Meta__AbortMultipart *op)
{
	Iolake__Meta__MultipartUpload *u = NULL;
	int rc = get_upload(t, op->bucket, op->key, op->upload_id, &u);
	if (rc)
		return rc;
	if (op->parts_conditional && u->parts_generation != op->if_parts_generation) {
		meta_state_free_msg(u);
		return IOL_ECONFLICT;
	}
	if (u->part_rows) {
		/* Part rows stay until the GC worker frees them in batches
		 * (FreePartRows, once the upload row below is gone): one small
		 * entry names them, however many and large the parts. */
		Iolake__Meta__ObjectRecord q = IOLAKE__META__OBJECT_RECORD__INIT;
		q.bucket = op->bucket;
		q.key = op->key;
		q.upload_id = op->upload_id;
		q.part_rows = true;
		gc_record(t, &q);
	} else {
		drop_parts(t, u, op->bucket, op->key, op->upload_id, NULL, 0);
	}
	range_count(t, 0, 0, -1);
	struct key k;
	key_upload(&k, op->bucket, op->key, op->upload_id);
	tx_del(t, &k);
	meta_state_free_msg(u);
	return 0;
}
