/*
 * test_secret.c — meta/secret.c: the cluster key file and the sealed
 * form of access key secrets. Round trip; a wrong key (refused by id, and
 * by the tag when two keys share an id); every single-bit change of a
 * blob refused; a blob moved to another access key id refused; the blob
 * decoder on every truncation; key files: made 0600, never overwritten,
 * refused when others may read them or when not 64 hex digits; the data
 * dir's key-id mark; seal_key on a protobuf record.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "meta/secret.h"
#include "meta_test_util.h"

static const char SECRET[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

static void key_of(struct meta_secret *s, uint8_t fill)
{
	uint8_t k[META_SECRET_KEY_BYTES];
	memset(k, fill, sizeof(k));
	meta_secret_init(s, k);
}

START_TEST(test_round_trip)
{
	struct meta_secret s;
	key_of(&s, 7);
	uint8_t blob[META_SECRET_BLOB_MAX], blob2[META_SECRET_BLOB_MAX];
	int n = meta_secret_seal(&s, "AKIDEXAMPLE", SECRET, strlen(SECRET), blob);
	ck_assert_int_eq(n, META_SECRET_BLOB_HEAD + (int)strlen(SECRET) + META_SECRET_TAG_BYTES);
	ck_assert(memmem(blob, (size_t)n, SECRET, strlen(SECRET)) == NULL);
	char out[META_SECRET_MAX + 1];
	uint32_t id = 0;
	ck_assert_int_eq(meta_secret_open(&s, "AKIDEXAMPLE", blob, (size_t)n, out, sizeof(out), &id),
			 (int)strlen(SECRET));
	ck_assert_str_eq(out, SECRET);
	ck_assert_uint_eq(id, s.key_id);
	/* A fresh nonce each time: the same secret seals differently. */
	int n2 = meta_secret_seal(&s, "AKIDEXAMPLE", SECRET, strlen(SECRET), blob2);
	ck_assert_int_eq(n2, n);
	ck_assert(memcmp(blob, blob2, (size_t)n) != 0);
	/* Bounds: 1 and META_SECRET_MAX bytes; 0 and one more refused. */
	char big[META_SECRET_MAX + 2];
	memset(big, 'x', sizeof(big));
	ck_assert_int_gt(meta_secret_seal(&s, "A", big, META_SECRET_MAX, blob), 0);
	ck_assert_int_eq(meta_secret_open(&s, "A", blob, META_SECRET_BLOB_MAX, out, sizeof(out),
					  NULL), META_SECRET_MAX);
	ck_assert_int_eq(meta_secret_seal(&s, "A", big, META_SECRET_MAX + 1, blob), -EINVAL);
	ck_assert_int_eq(meta_secret_seal(&s, "A", big, 0, blob), -EINVAL);
	n = meta_secret_seal(&s, "A", "x", 1, blob);
	ck_assert_int_eq(meta_secret_open(&s, "A", blob, (size_t)n, out, 1, NULL), -ENOSPC);
	meta_secret_wipe(&s);
}
END_TEST

START_TEST(test_wrong_key)
{
	struct meta_secret a, b;
	key_of(&a, 1);
	key_of(&b, 2);
	ck_assert_uint_ne(a.key_id, b.key_id);
	uint8_t blob[META_SECRET_BLOB_MAX];
	int n = meta_secret_seal(&a, "AK1", SECRET, strlen(SECRET), blob);
	char out[META_SECRET_MAX + 1];
	uint32_t id = 0;
	ck_assert_int_eq(meta_secret_open(&b, "AK1", blob, (size_t)n, out, sizeof(out), &id),
			 -ENOKEY);
	ck_assert_uint_eq(id, a.key_id);   /* says which key sealed it */
	ck_assert_int_eq(meta_secret_open(NULL, "AK1", blob, (size_t)n, out, sizeof(out), NULL),
			 -ENOKEY);
	/* Another key under the same id (a forged or colliding id): the tag
	 * refuses it, and nothing of the output is left. */
	b.key_id = a.key_id;
	memset(out, 'z', sizeof(out));
	ck_assert_int_eq(meta_secret_open(&b, "AK1", blob, (size_t)n, out, sizeof(out), NULL),
			 -EBADMSG);
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_int_eq(out[i], 0);
}
END_TEST

START_TEST(test_tampered)
{
	struct meta_secret s;
	key_of(&s, 3);
	uint8_t blob[META_SECRET_BLOB_MAX];
	int n = meta_secret_seal(&s, "AK1", SECRET, strlen(SECRET), blob);
	char out[META_SECRET_MAX + 1];
	/* Every bit of every byte: version and key id change the header
	 * (-EINVAL / -ENOKEY), the rest fails the tag (-EBADMSG). */
	for (int i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			blob[i] ^= (uint8_t)(1 << bit);
			int rc = meta_secret_open(&s, "AK1", blob, (size_t)n, out, sizeof(out), NULL);
			if (i == 0)
				ck_assert_int_eq(rc, -EINVAL);
			else if (i < 5)
				ck_assert_int_eq(rc, -ENOKEY);
			else
				ck_assert_int_eq(rc, -EBADMSG);
			blob[i] ^= (uint8_t)(1 << bit);
		}
	/* Moved to another record: the access key id is associated data. */
	ck_assert_int_eq(meta_secret_open(&s, "AK2", blob, (size_t)n, out, sizeof(out), NULL),
			 -EBADMSG);
	/* Cut short or made longer. */
	for (int len = 0; len < n; len++) {
		int rc = meta_secret_open(&s, "AK1", blob, (size_t)len, out, sizeof(out), NULL);
		ck_assert(rc == -EINVAL || rc == -EBADMSG);
	}
	blob[n] = 0;
	ck_assert_int_eq(meta_secret_open(&s, "AK1", blob, (size_t)n + 1, out, sizeof(out), NULL),
			 -EBADMSG);
	ck_assert_int_eq(meta_secret_open(&s, "AK1", blob, (size_t)n, out, sizeof(out), NULL),
			 (int)strlen(SECRET));
}
END_TEST

START_TEST(test_blob_parse)
{
	uint8_t blob[META_SECRET_BLOB_MAX + 1];
	memset(blob, 0xab, sizeof(blob));
	blob[0] = META_SECRET_BLOB_VERSION;
	struct meta_secret_blob b;
	for (size_t n = 0; n <= sizeof(blob); n++) {
		int rc = meta_secret_blob_parse(blob, n, &b);
		bool ok = n >= META_SECRET_BLOB_HEAD + 1 + META_SECRET_TAG_BYTES &&
			  n <= META_SECRET_BLOB_MAX;
		ck_assert_int_eq(rc, ok ? 0 : -EINVAL);
		if (ok) {
			ck_assert_uint_eq(b.key_id, 0xabababab);
			ck_assert_uint_eq(b.ct_len, n - META_SECRET_BLOB_HEAD - META_SECRET_TAG_BYTES);
			ck_assert_ptr_eq(b.tag + META_SECRET_TAG_BYTES, blob + n);
		}
	}
	blob[0] = 2;
	ck_assert_int_eq(meta_secret_blob_parse(blob, 64, &b), -EINVAL);
	ck_assert_int_eq(meta_secret_blob_parse(NULL, 64, &b), -EINVAL);
}
END_TEST

START_TEST(test_key_files)
{
	char dir[64], path[128], err[512];
	tmpdir(dir);
	snprintf(path, sizeof(path), "%s/k", dir);
	ck_assert_int_eq(meta_secret_create(path, err, sizeof(err)), 0);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(st.st_size, 65);
	struct meta_secret a, b;
	ck_assert_int_eq(meta_secret_load(path, &a, err, sizeof(err)), 0);
	/* Never overwritten. */
	ck_assert_int_eq(meta_secret_create(path, err, sizeof(err)), -EEXIST);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), 0);
	ck_assert_mem_eq(a.key, b.key, sizeof(a.key));
	ck_assert_uint_eq(a.key_id, b.key_id);
	/* Others may read it: refused, and the message says what to do. */
	chmod(path, 0640);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	chmod(path, 0600);
	/* Not a key: short, not hex, missing. The message never holds key
	 * bytes (it names the file). */
	FILE *f = fopen(path, "w");
	fputs("00112233\n", f);
	fclose(f);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(strstr(err, "00112233"));
	f = fopen(path, "w");
	for (int i = 0; i < 64; i++)
		fputc(i == 10 ? 'g' : 'a', f);
	fclose(f);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), -EINVAL);
	f = fopen(path, "w");
	for (int i = 0; i < 64; i++)
		fputc('A', f);
	fclose(f);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), 0);
	struct meta_secret c;
	key_of(&c, 0xaa);
	ck_assert_mem_eq(b.key, c.key, sizeof(c.key));
	ck_assert_uint_eq(b.key_id, c.key_id);
	snprintf(path, sizeof(path), "%s/none", dir);
	ck_assert_int_eq(meta_secret_load(path, &b, err, sizeof(err)), -ENOENT);

	/* The data dir's mark: set on first use with a key, then that key
	 * only; without a key a marked dir is refused, an unmarked one not. */
	char mdir[96];
	snprintf(mdir, sizeof(mdir), "%s/meta", dir);
	mkdir(mdir, 0700);
	ck_assert_int_eq(meta_secret_check_dir(mdir, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(meta_secret_check_dir(mdir, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(meta_secret_check_dir(mdir, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(meta_secret_check_dir(mdir, NULL, err, sizeof(err)), -ENOKEY);
	ck_assert_ptr_nonnull(strstr(err, "--secret-key-file"));
	ck_assert_int_eq(meta_secret_check_dir(mdir, &c, err, sizeof(err)), -EKEYREJECTED);
	rm_rf(dir);
}
END_TEST

START_TEST(test_seal_key_record)
{
	struct meta_secret s;
	key_of(&s, 9);
	Iolake__Meta__AccessKey *k = malloc(sizeof(*k));
	iolake__meta__access_key__init(k);
	k->access_key_id = strdup("AKIDEXAMPLE");
	k->user = strdup("alice");
	k->secret_key = strdup(SECRET);
	char out[META_SECRET_MAX + 1];
	/* Clear (an old record): read as it is. */
	ck_assert_int_eq(meta_secret_of_key(NULL, k, out, sizeof(out), NULL), (int)strlen(SECRET));
	ck_assert_str_eq(out, SECRET);
	ck_assert_int_eq(meta_secret_seal_key(&s, k), 0);
	ck_assert_str_eq(k->secret_key, "");
	ck_assert_uint_gt(k->secret_sealed.len, 0);
	/* Packed, the record holds no clear secret. */
	size_t n = iolake__meta__access_key__get_packed_size(k);
	uint8_t *buf = malloc(n);
	iolake__meta__access_key__pack(k, buf);
	ck_assert(memmem(buf, n, SECRET, strlen(SECRET)) == NULL);
	Iolake__Meta__AccessKey *back = iolake__meta__access_key__unpack(NULL, n, buf);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(meta_secret_of_key(&s, back, out, sizeof(out), NULL), (int)strlen(SECRET));
	ck_assert_str_eq(out, SECRET);
	ck_assert_int_eq(meta_secret_of_key(NULL, back, out, sizeof(out), NULL), -ENOKEY);
	/* Sealed already and no clear secret: left alone. */
	ck_assert_int_eq(meta_secret_seal_key(&s, back), 0);
	/* No secret at all. */
	free(back->secret_sealed.data);
	back->secret_sealed.data = NULL;
	back->secret_sealed.len = 0;
	ck_assert_int_eq(meta_secret_of_key(&s, back, out, sizeof(out), NULL), -ENOENT);
	ck_assert_int_eq(meta_secret_seal_key(&s, back), -EINVAL);
	iolake__meta__access_key__free_unpacked(back, NULL);
	iolake__meta__access_key__free_unpacked(k, NULL);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("secret");
	TCase *tc = tcase_create("secret");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_wrong_key);
	tcase_add_test(tc, test_tampered);
	tcase_add_test(tc, test_blob_parse);
	tcase_add_test(tc, test_key_files);
	tcase_add_test(tc, test_seal_key_record);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
