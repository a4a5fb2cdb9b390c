/*
 * test_refs.c — the shard reference index of the meta state machine ('X'
 * in meta/state.c, what CheckShards answers) on real RocksDB under
 * /dev/shm. Layouts are real encoded gw_data layouts (layout.proto).
 *
 * After every step, the index answers exactly the ids the live records
 * and parts name (put, overwrite, delete, inline, a layout named twice;
 * multipart put-part, replaced part, complete keeping some parts, abort,
 * an overwrite of the completed object), and it equals the index built
 * from scratch: the state's digest is unchanged by an import of the same
 * export with every 'X' key stripped (import builds it), and by a reopen
 * of the directory after the 'X' keys were deleted behind the state's
 * back (an older data dir: open builds it) or after one was lost with the
 * marker left behind the applied index (a downgrade: open rebuilds).
 */
#include <check.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "meta/state.h"
#include "meta_test_util.h"
#include "proto/layout.pb-c.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];
#define ETAG "0123456789abcdef0123456789abcdef"
#define ETAG2 "11111111111111111111111111111111"

/* An encoded 4+2 layout of a 2 MiB object (1 MiB segments) in pg whose
 * 16-byte object id is tag repeated. */
static void set_layout(struct tb *t, ProtobufCBinaryData *out, uint32_t pg, uint8_t tag)
{
	Iolake__Layout__ObjectLayout l = IOLAKE__LAYOUT__OBJECT_LAYOUT__INIT;
	uint8_t id[16];
	uint32_t crcs[12];
	memset(id, tag, sizeof(id));
	for (int i = 0; i < 12; i++)
		crcs[i] = 0x9e3779b9u * (uint32_t)(i + tag);
	l.version = 1;
	l.k = 4;
	l.m = 2;
	l.segment_bytes = 1 << 20;
	l.size = 2 << 20;
	l.object_id.data = id;
	l.object_id.len = 16;
	l.pg = pg;
	l.shard_crc32c = crcs;
	l.n_shard_crc32c = 12;
	out->len = iolake__layout__object_layout__get_packed_size(&l);
	out->data = tb_alloc(t, out->len);
	iolake__layout__object_layout__pack(&l, out->data);
}

/* PutObject bucket/key naming one layout (pg, tag). */
static void put_lay(struct tb *t, const char *bucket, const char *key, uint32_t pg, uint8_t tag)
{
	Iolake__Meta__PutObject *p = tb_put(t, 0, 0, bucket, key, 2 << 20);
	p->record->n_segments = 0;
	set_layout(t, &p->record->data_layout, pg, tag);
}

static bool ref(struct meta_state *s, uint32_t pg, uint8_t tag)
{
	uint8_t id[16];
	const uint8_t *ids[1] = { id };
	bool b = false;
	memset(id, tag, sizeof(id));
	ck_assert_int_eq(meta_state_check_refs(s, pg, ids, 1, &b), 0);
	return b;
}

static void digest(struct meta_state *s, uint8_t d[32])
{
	ck_assert_int_eq(meta_state_digest(s, d), 0);
}

/* Export s, drop every 'X' key (and the "X" marker), import that into a
 * fresh state in dir2: its digest must equal s's (import builds the
 * index from the records). */
static void check_rebuild(struct meta_state *s)
{
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(meta_state_export(s, malloc, free, &buf, &len), 0);
	uint8_t *out = malloc(len);
	ck_assert_ptr_nonnull(out);
	memcpy(out, buf, 16);
	size_t off = 16, w = 16, end = len - SHA256_LEN;
	uint64_t kept = 0, dropped = 0;
	while (off < end) {
		uint32_t kn, vn;
		memcpy(&kn, buf + off, 4);
		memcpy(&vn, buf + off + 4, 4);
		size_t sz = 8 + (size_t)kn + vn;
		if (kn > 0 && buf[off + 8] == 'X') {
			dropped++;
		} else {
			memcpy(out + w, buf + off, sz);
			w += sz;
			kept++;
		}
		off += sz;
	}
	ck_assert_uint_ge(dropped, 1);   /* at least the marker */
	for (int i = 0; i < 8; i++)
		out[8 + i] = (uint8_t)(kept >> (8 * i));
	hash_sha256(out, w, out + w);
	char dir2[64];
	tmpdir(dir2);
	struct meta_state *s2 = NULL;
	ck_assert_int_eq(meta_state_open(dir2, NULL, &s2), 0);
	ck_assert_int_eq(meta_state_import(s2, out, w + SHA256_LEN), 0);
	uint8_t d1[32], d2[32];
	digest(s, d1);
	digest(s2, d2);
	ck_assert_mem_eq(d1, d2, 32);
	meta_state_close(s2);
	rm_rf(dir2);
	free(out);
	free(buf);
}

START_TEST(test_refs_objects)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	uint64_t idx = 1;

	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	put_lay(t, "bkt", "a", 3, 0xa1);
	put_lay(t, "bkt", "c", 7, 0xc1);
	tb_put(t, 0, 0, "bkt", "small", 10);   /* inline: names nothing */
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(res[i].err, 0);
	ck_assert(ref(s, 3, 0xa1));
	ck_assert(!ref(s, 4, 0xa1));   /* the pg is part of the key */
	ck_assert(ref(s, 7, 0xc1));
	ck_assert(!ref(s, 3, 0xb1));
	check_rebuild(s);

	/* Overwrite: the old id stops being referenced in the same apply. */
	t = tb_new();
	put_lay(t, "bkt", "a", 3, 0xa2);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert(!ref(s, 3, 0xa1));
	ck_assert(ref(s, 3, 0xa2));
	check_rebuild(s);

	/* Overwrite and delete in one batch. */
	t = tb_new();
	put_lay(t, "bkt", "c", 7, 0xc2);
	tb_delete(t, 0, 0, "bkt", "c");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 2);
	ck_assert(!ref(s, 7, 0xc1));
	ck_assert(!ref(s, 7, 0xc2));

	/* A layout two records name (no gateway path does it): referenced
	 * until both are gone. */
	t = tb_new();
	put_lay(t, "bkt", "d1", 9, 0xd1);
	put_lay(t, "bkt", "d2", 9, 0xd1);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 2);
	t = tb_new();
	tb_delete(t, 0, 0, "bkt", "d1");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert(ref(s, 9, 0xd1));
	check_rebuild(s);
	t = tb_new();
	tb_delete(t, 0, 0, "bkt", "d2");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert(!ref(s, 9, 0xd1));

	/* A failed conditional put changes nothing. */
	t = tb_new();
	Iolake__Meta__PutObject *p = tb_put(t, 0, 0, "bkt", "a", 2 << 20);
	p->record->n_segments = 0;
	set_layout(t, &p->record->data_layout, 3, 0xa3);
	p->if_none_match = true;
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert(!ref(s, 3, 0xa3));
	ck_assert(ref(s, 3, 0xa2));

	/* A batch of lookups, and the bound. */
	uint8_t ids[3][16];
	const uint8_t *pid[3] = { ids[0], ids[1], ids[2] };
	bool b[3];
	memset(ids[0], 0xa2, 16);
	memset(ids[1], 0xa1, 16);
	memset(ids[2], 0xa2, 16);
	ck_assert_int_eq(meta_state_check_refs(s, 3, pid, 3, b), 0);
	ck_assert(b[0] && !b[1] && b[2]);
	ck_assert_int_eq(meta_state_check_refs(s, 3, pid, META_CHECK_SHARDS_MAX + 1, b), -EINVAL);
	check_rebuild(s);

	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_refs_multipart)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	uint64_t idx = 1;

	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "mpb", "alice");
	tb_create_upload(t, "mpb", "big");
	tb_create_upload(t, "mpb", "big");
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 3);
	char up[17], up2[17];
	memcpy(up, res[1].upload_id, sizeof(up));
	memcpy(up2, res[2].upload_id, sizeof(up2));

	/* Parts 1..3 of up, part 1 of up2. */
	t = tb_new();
	for (uint32_t n = 1; n <= 3; n++)
		set_layout(t, &tb_part(t, up, n, 2 << 20, ETAG)->data_layout, 5, (uint8_t)(0x10 + n));
	set_layout(t, &tb_part(t, up2, 1, 2 << 20, ETAG)->data_layout, 5, 0x21);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(res[i].err, 0);
	for (uint8_t n = 1; n <= 3; n++)
		ck_assert(ref(s, 5, (uint8_t)(0x10 + n)));
	ck_assert(ref(s, 5, 0x21));
	check_rebuild(s);

	/* Part 2 uploaded again: the first upload's id goes. */
	t = tb_new();
	set_layout(t, &tb_part(t, up, 2, 2 << 20, ETAG2)->data_layout, 5, 0x1b);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert(!ref(s, 5, 0x12));
	ck_assert(ref(s, 5, 0x1b));

	/* Complete with parts 1 and 2: they move into the object (still
	 * referenced), part 3 is dropped. */
	t = tb_new();
	const uint32_t nums[2] = { 1, 2 };
	const char *etags[2] = { ETAG, ETAG2 };
	tb_complete(t, up, nums, etags, 2);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(ref(s, 5, 0x11));
	ck_assert(ref(s, 5, 0x1b));
	ck_assert(!ref(s, 5, 0x13));
	ck_assert(ref(s, 5, 0x21));   /* the other upload is untouched */
	check_rebuild(s);

	/* Abort of up2. */
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__AbortMultipart *ab = tb_alloc(t, sizeof(*ab));
	iolake__meta__abort_multipart__init(ab);
	ab->bucket = tb_str(t, "mpb");
	ab->key = tb_str(t, "big");
	ab->upload_id = tb_str(t, up2);
	op->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op->abort_multipart = ab;
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(!ref(s, 5, 0x21));
	check_rebuild(s);

	/* An overwrite of the completed object drops every segment's id. */
	t = tb_new();
	put_lay(t, "mpb", "big", 6, 0x31);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 1);
	ck_assert(!ref(s, 5, 0x11));
	ck_assert(!ref(s, 5, 0x1b));
	ck_assert(ref(s, 6, 0x31));
	check_rebuild(s);

	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* Delete every 'X' key of the closed state in dir (and the marker): what
 * a data dir written before the index looks like. With stale_only, only
 * the first index key goes and the marker is set behind "A" instead: what
 * a binary that did not keep the index (a downgrade) leaves. */
static void strip_dir(const char *dir, bool stale_only)
{
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_t *db = rocksdb_open(o, dir, &err);
	ck_assert_ptr_null(err);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
	int n = 0;
	for (rocksdb_iter_seek(it, "X", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kn;
		const char *k = rocksdb_iter_key(it, &kn);
		if (k[0] != 'X')
			break;
		if (stale_only && kn == 1) {
			const char behind[8] = { 0, 0, 0, 0, 0, 0, 0, 1 };
			rocksdb_put(db, wo, "X", 1, behind, 8, &err);
		} else {
			rocksdb_delete(db, wo, k, kn, &err);
		}
		ck_assert_ptr_null(err);
		if (++n == 2 && stale_only)
			break;
	}
	ck_assert_int_ge(n, 2);
	rocksdb_iter_destroy(it);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_readoptions_destroy(ro);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
}

START_TEST(test_refs_build_at_open)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	tb_create_bucket(t, 0, 0, "mpb", "alice");
	for (int i = 0; i < 50; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		put_lay(t, "bkt", key, (uint32_t)i % 7, (uint8_t)i);
	}
	tb_create_upload(t, "mpb", "big");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 53);
	char up[17];
	memcpy(up, res[52].upload_id, sizeof(up));
	t = tb_new();
	set_layout(t, &tb_part(t, up, 1, 2 << 20, ETAG)->data_layout, 2, 0xee);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	uint8_t before[32], after[32];
	digest(s, before);
	meta_state_close(s);

	strip_dir(dir, false);
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	ck_assert_uint_eq(meta_state_applied_index(s), 2);
	digest(s, after);
	ck_assert_mem_eq(before, after, 32);
	ck_assert(ref(s, 3, 10));
	ck_assert(ref(s, 2, 0xee));
	ck_assert(!ref(s, 3, 11));
	/* A second open finds the marker and leaves it all as it is. */
	meta_state_close(s);
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	digest(s, after);
	ck_assert_mem_eq(before, after, 32);
	meta_state_close(s);
	/* A marker behind "A" (an older binary applied since): rebuilt. */
	strip_dir(dir, true);
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	digest(s, after);
	ck_assert_mem_eq(before, after, 32);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_layout_ref_codec)
{
	struct tb *t = tb_new();
	ProtobufCBinaryData l;
	set_layout(t, &l, 123456, 0x5a);
	uint32_t pg;
	uint8_t id[16], want[16];
	memset(want, 0x5a, 16);
	ck_assert(meta_layout_ref(l.data, l.len, &pg, id));
	ck_assert_uint_eq(pg, 123456);
	ck_assert_mem_eq(id, want, 16);
	/* Every truncation is refused or still names the same id, never
	 * read past the end (run under ASan with make asan). */
	for (size_t n = 0; n < l.len; n++)
		if (meta_layout_ref(l.data, n, &pg, id))
			ck_assert_mem_eq(id, want, 16);
	ck_assert(!meta_layout_ref((const uint8_t *)"\xff\xff", 2, &pg, id));
	tb_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("refs");
	TCase *tc = tcase_create("refs");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_refs_objects);
	tcase_add_test(tc, test_refs_multipart);
	tcase_add_test(tc, test_refs_build_at_open);
	tcase_add_test(tc, test_layout_ref_codec);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
