/*
 * test_store.c — the shard store end to end on a file in /dev/shm and on a
 * loop device: byte-for-byte round trips at the size edges, ranges,
 * overwrite, delete, restart, listing, stat_many, checksum errors on a
 * flipped device byte, ENOSPC leaving data intact, concurrent overwrites
 * of one key leaking nothing.
 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "osd/store/cache.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "tests/lib/scratch.h"

struct h {
	uv_loop_t loop;
	struct store *s;
	struct store_opts o;
	char dev[160], meta[160];
	int pending;
	bool closed;
};

static char base[64];

static void setup_once(void)
{
	test_scratch_path(base, sizeof(base), "iolake-test-store-%d", (int)getpid());
}

static void rm_meta(const char *meta)
{
	char err[256];
	store_kv_destroy(meta, err, sizeof(err));
	rmdir(meta);
}

/* Remove a directory tree with plain syscalls: the runner process must not
 * start RocksDB's background threads, or forked tests inherit a broken
 * thread pool. */
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

/* Remove what a failed (forked) test may have left behind. */
static void teardown_once(void)
{
	static const char *names[] = { "rt", "ow", "ls", "cs", "ns", "co", "rf", "lp", "c1", "c2", "gn" };
	char p[192];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s-%s.dev", base, names[i]);
		unlink(p);
		snprintf(p, sizeof(p), "%s-%s.meta", base, names[i]);
		rm_tree(p);
	}
}

static void h_init(struct h *h, const char *name, uint64_t size)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->dev, sizeof(h->dev), "%s-%s.dev", base, name);
	snprintf(h->meta, sizeof(h->meta), "%s-%s.meta", base, name);
	unlink(h->dev);
	rm_meta(h->meta);
	ck_assert_int_eq(uv_loop_init(&h->loop), 0);
	h->o.device_path = h->dev;
	h->o.meta_dir = h->meta;
	h->o.create_size = size;
	h->o.cluster_id[0] = 0xc1;
	h->o.osd_id = 3;
}

static int h_open(struct h *h)
{
	char err[512];
	int rc = store_open(&h->loop, &h->o, &h->s, err, sizeof(err));
	if (rc)
		printf("store_open: %s (%s)\n", err, iol_errname(rc));
	return rc;
}

static void on_closed(void *arg)
{
	((struct h *)arg)->closed = true;
}

static void h_close(struct h *h)
{
	h->closed = false;
	store_close(h->s, on_closed, h);
	while (!h->closed)
		uv_run(&h->loop, UV_RUN_ONCE);
	uv_run(&h->loop, UV_RUN_NOWAIT);
	h->s = NULL;
}

static void h_fini(struct h *h)
{
	if (h->s)
		h_close(h);
	ck_assert_int_eq(uv_loop_close(&h->loop), 0);
	unlink(h->dev);
	rm_meta(h->meta);
}

/* ---- synchronous wrappers that run the loop until the callback */

struct done {
	int status;
	bool fired;
};

static void put_cb(struct store_put_req *req, int status)
{
	struct done *d = req->data;
	d->status = status;
	d->fired = true;
}

static void get_cb(struct store_get_req *req, int status)
{
	struct done *d = req->data;
	d->status = status;
	d->fired = true;
}

static void del_cb(struct store_del_req *req, int status)
{
	struct done *d = req->data;
	d->status = status;
	d->fired = true;
}

static void run_until(struct h *h, struct done *d)
{
	while (!d->fired)
		uv_run(&h->loop, UV_RUN_ONCE);
}

static struct store_key key_of(uint32_t pg, const char *oid, uint8_t shard)
{
	struct store_key k;
	ck_assert_int_eq(store_key_make(&k, pg, oid, strlen(oid), shard), 0);
	return k;
}

static int put_sync(struct h *h, const struct store_key *k, const uint8_t *data, size_t len)
{
	struct store_put_req req = { 0 };
	struct done d = { 0 };
	req.data = &d;
	struct buf *b = buf_copy(data, len);
	struct buf_slice sl = { b, 0, len };
	int rc = store_put(h->s, &req, k, sl, put_cb);
	buf_unref(b); /* the store copied what it needs */
	if (rc)
		return rc;
	run_until(h, &d);
	return d.status;
}

static int get_sync(struct h *h, const struct store_key *k, uint64_t off, uint64_t len,
		    struct buf_slice *out, char *err)
{
	struct store_get_req req = { 0 };
	struct done d = { 0 };
	req.data = &d;
	int rc = store_get(h->s, &req, k, off, len, get_cb);
	if (rc)
		return rc;
	run_until(h, &d);
	if (err)
		strcpy(err, req.err);
	*out = req.out;
	return d.status;
}

static int del_sync(struct h *h, const struct store_key *k)
{
	struct store_del_req req = { 0 };
	struct done d = { 0 };
	req.data = &d;
	int rc = store_delete(h->s, &req, k, del_cb);
	if (rc)
		return rc;
	run_until(h, &d);
	return d.status;
}

static uint8_t *pattern(size_t len, uint32_t seed)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
	return p;
}

static void expect_shard(struct h *h, const struct store_key *k, const uint8_t *want, size_t len)
{
	struct buf_slice out;
	char err[400];
	int rc = get_sync(h, k, 0, UINT64_MAX, &out, err);
	ck_assert_msg(rc == 0, "get of %zu bytes: %s %s", len, iol_errname(rc), err);
	ck_assert_uint_eq(out.len, len);
	if (len)
		ck_assert_msg(memcmp(buf_slice_data(&out), want, len) == 0, "bytes differ (%zu)", len);
	buf_unref(out.buf);
}

static void expect_space_consistent(struct h *h)
{
	struct store_space sp;
	store_space(h->s, &sp);
	ck_assert_uint_eq(sp.used_bytes + sp.reserved_bytes + sp.free_bytes, sp.total_bytes);
	ck_assert_uint_eq(sp.reserved_bytes, 0);
}

/* Sum of the blocks the index names, from a full listing of the pgs used. */
static uint64_t listed_bytes(struct h *h, uint32_t pg_lo, uint32_t pg_hi)
{
	uint64_t sum = 0;
	struct store_list_ent ents[16];
	for (uint32_t pg = pg_lo; pg <= pg_hi; pg++) {
		bool more = true;
		struct store_key after;
		bool have_after = false;
		while (more) {
			int n = store_list(h->s, pg, have_after ? &after : NULL, ents, 16, &more);
			ck_assert_int_ge(n, 0);
			for (int i = 0; i < n; i++)
				sum += (uint64_t)ents[i].stat.blocks * STORE_BLOCK_SIZE;
			if (n) {
				after = ents[n - 1].key;
				have_after = true;
			}
		}
	}
	return sum;
}

static const size_t sizes[] = { 0, 1, 4095, 4096, 65536, 65537, 1 << 20, 4 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Round trip + ranges + restart on an opened h; shared by file and loop
 * device tests. */
static void round_trip_restart(struct h *h)
{
	uint8_t *data[NSIZES];
	struct store_key keys[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		char oid[32];
		snprintf(oid, sizeof(oid), "obj-%zu", sizes[i]);
		keys[i] = key_of(1, oid, (uint8_t)i);
		data[i] = pattern(sizes[i], (uint32_t)i + 1);
		ck_assert_int_eq(put_sync(h, &keys[i], data[i], sizes[i]), 0);
		expect_shard(h, &keys[i], data[i], sizes[i]);
		struct store_stat st;
		ck_assert_int_eq(store_stat(h->s, &keys[i], &st), 0);
		ck_assert_uint_eq(st.length, sizes[i]);
		ck_assert_uint_eq(st.crc, crc32c(0, data[i], sizes[i]));
		ck_assert_int_eq(st.is_inline, sizes[i] <= 65536);
	}
	/* Ranges: across crc blocks, the tail, empty, and past the end. */
	struct { size_t idx; uint64_t off, len; } r[] = {
		{ 6, 0, 1 }, { 6, 65535, 2 }, { 6, 65536 * 3 + 7, 65536 * 2 }, { 7, (4 << 20) - 5, 100 },
		{ 5, 65536, 1 }, { 2, 100, 200 }, { 7, 12345, 0 }, { 0, 0, 10 },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		struct buf_slice out;
		size_t len = sizes[r[i].idx];
		ck_assert_int_eq(get_sync(h, &keys[r[i].idx], r[i].off, r[i].len, &out, NULL), 0);
		uint64_t want = r[i].len > len - r[i].off ? len - r[i].off : r[i].len;
		ck_assert_uint_eq(out.len, want);
		if (want)
			ck_assert(memcmp(buf_slice_data(&out), data[r[i].idx] + r[i].off, want) == 0);
		buf_unref(out.buf);
	}
	struct buf_slice out;
	ck_assert_int_eq(get_sync(h, &keys[1], 2, 1, &out, NULL), -EINVAL);
	struct store_key nokey = key_of(1, "missing", 0);
	ck_assert_int_eq(get_sync(h, &nokey, 0, 1, &out, NULL), IOL_ENOT_FOUND);

	struct store_space before;
	store_space(h->s, &before);
	h_close(h);
	ck_assert_int_eq(h_open(h), 0);
	for (size_t i = 0; i < NSIZES; i++) {
		expect_shard(h, &keys[i], data[i], sizes[i]);
		free(data[i]);
	}
	struct store_space after;
	store_space(h->s, &after);
	ck_assert_mem_eq(&before, &after, sizeof(before));
	ck_assert_uint_eq(after.used_bytes, listed_bytes(h, 1, 1));
	expect_space_consistent(h);
}

START_TEST(file_round_trip_restart)
{
	struct h h;
	h_init(&h, "rt", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	round_trip_restart(&h);
	h_fini(&h);
}
END_TEST

START_TEST(overwrite_and_delete)
{
	struct h h;
	h_init(&h, "ow", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	struct store_key k = key_of(2, "o", 0);
	uint8_t *a = pattern(1 << 20, 1), *b = pattern(300000, 2), *c = pattern(1000, 3);
	ck_assert_int_eq(put_sync(&h, &k, a, 1 << 20), 0);
	struct store_space sp;
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, 1 << 20);
	ck_assert_int_eq(put_sync(&h, &k, b, 300000), 0); /* extent -> extent */
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, 74 * 4096); /* old extent freed */
	expect_shard(&h, &k, b, 300000);
	ck_assert_uint_eq(sp.inline_bytes, 0);
	ck_assert_int_eq(put_sync(&h, &k, c, 1000), 0); /* extent -> inline */
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, 0);
	ck_assert_uint_eq(sp.inline_bytes, 1000);
	expect_shard(&h, &k, c, 1000);
	/* Inline bytes: counted per key, replaced, rebuilt at open. */
	struct store_key k2 = key_of(2, "o2", 0);
	ck_assert_int_eq(put_sync(&h, &k2, c, 700), 0);
	ck_assert_int_eq(put_sync(&h, &k2, c, 900), 0); /* inline -> inline */
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.inline_bytes, 1900);
	h_close(&h);
	ck_assert_int_eq(h_open(&h), 0);
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.inline_bytes, 1900);
	ck_assert_int_eq(del_sync(&h, &k2), 0);
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.inline_bytes, 1000);
	ck_assert_int_eq(put_sync(&h, &k, a, 1 << 20), 0); /* inline -> extent */
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.inline_bytes, 0);
	ck_assert_int_eq(del_sync(&h, &k), 0);
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, 0);
	struct buf_slice out;
	ck_assert_int_eq(get_sync(&h, &k, 0, 1, &out, NULL), IOL_ENOT_FOUND);
	ck_assert_int_eq(del_sync(&h, &k), IOL_ENOT_FOUND);
	struct store_stat st;
	ck_assert_int_eq(store_stat(h.s, &k, &st), IOL_ENOT_FOUND);
	h_close(&h);
	ck_assert_int_eq(h_open(&h), 0);
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, 0);
	ck_assert_int_eq(store_stat(h.s, &k, &st), IOL_ENOT_FOUND);
	free(a);
	free(b);
	free(c);
	h_fini(&h);
}
END_TEST

START_TEST(list_and_stat_many)
{
	struct h h;
	h_init(&h, "ls", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	/* pg 5 gets 23 shards inserted out of order; pgs 4 and 6 a few each. */
	const char *oids[] = { "zeta", "a", "ab", "a\x01", "m", "b" };
	int n5 = 0;
	for (int i = 5; i >= 0; i--)
		for (int sh = 3; sh >= 0; sh--) {
			if (i == 2 && sh == 3)
				continue;
			struct store_key k = key_of(5, oids[i], (uint8_t)sh);
			uint8_t v = (uint8_t)(i * 4 + sh);
			ck_assert_int_eq(put_sync(&h, &k, &v, 1), 0);
			n5++;
		}
	for (uint32_t pg = 4; pg <= 6; pg += 2) {
		struct store_key k = key_of(pg, "other", 0);
		ck_assert_int_eq(put_sync(&h, &k, (const uint8_t *)"x", 1), 0);
	}
	/* Expected order: oid bytewise ("a" < "a\x01" < "ab" < "b" < "m" <
	 * "zeta"), then shard. */
	const char *order[] = { "a", "a\x01", "ab", "b", "m", "zeta" };
	struct store_list_ent all[64];
	int got = 0;
	bool more = true;
	struct store_key after;
	int pages = 0;
	while (more) {
		int n = store_list(h.s, 5, got ? &after : NULL, all + got, 5, &more);
		ck_assert_int_ge(n, 0);
		ck_assert_int_le(n, 5);
		if (more)
			ck_assert_int_eq(n, 5);
		got += n;
		if (n)
			after = all[got - 1].key;
		pages++;
	}
	ck_assert_int_eq(got, n5);
	ck_assert_int_eq(pages, (n5 + 4) / 5);
	int idx = 0;
	for (int o = 0; o < 6; o++)
		for (int sh = 0; sh < 4; sh++) {
			if (strcmp(order[o], "ab") == 0 && sh == 3)
				continue;
			ck_assert_uint_eq(all[idx].key.pg, 5);
			ck_assert_uint_eq(all[idx].key.oid_len, strlen(order[o]));
			ck_assert(memcmp(all[idx].key.oid, order[o], strlen(order[o])) == 0);
			ck_assert_uint_eq(all[idx].key.shard, sh);
			ck_assert_uint_eq(all[idx].stat.length, 1);
			idx++;
		}
	/* An empty pg. */
	ck_assert_int_eq(store_list(h.s, 7, NULL, all, 5, &more), 0);
	ck_assert(!more);

	struct store_key keys[4] = { key_of(5, "m", 1), key_of(5, "ab", 3), key_of(4, "other", 0),
				     key_of(5, "zeta", 0) };
	struct store_stat st[4];
	int status[4];
	ck_assert_int_eq(store_stat_many(h.s, keys, 4, st, status), 0);
	ck_assert_int_eq(status[0], 0);
	ck_assert_int_eq(status[1], IOL_ENOT_FOUND);
	ck_assert_int_eq(status[2], 0);
	ck_assert_int_eq(status[3], 0);
	uint8_t v = 4 * 4 + 1; /* "m" is oids[4] */
	ck_assert_uint_eq(st[0].crc, crc32c(0, &v, 1));
	ck_assert(st[2].is_inline);
	h_fini(&h);
}
END_TEST

START_TEST(flipped_byte_is_checksum_error)
{
	struct h h;
	h_init(&h, "cs", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	struct store_key k = key_of(9, "victim", 4);
	size_t len = 300000; /* 5 crc blocks */
	uint8_t *d = pattern(len, 77);
	ck_assert_int_eq(put_sync(&h, &k, d, len), 0);
	struct store_stat st;
	ck_assert_int_eq(store_stat(h.s, &k, &st), 0);
	ck_assert(!st.is_inline);
	h_close(&h);

	/* Flip one byte in crc block 2, behind the store's back. */
	int fd = open(h.dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(STORE_DATA_OFF + st.block * STORE_BLOCK_SIZE + 2 * 65536 + 1234);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
	byte ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	close(fd);

	ck_assert_int_eq(h_open(&h), 0);
	struct buf_slice out = { 0 };
	char err[400];
	ck_assert_int_eq(get_sync(&h, &k, 0, UINT64_MAX, &out, err), IOL_ECHECKSUM);
	ck_assert_ptr_null(out.buf);
	ck_assert_ptr_nonnull(strstr(err, "victim"));
	ck_assert_ptr_nonnull(strstr(err, "pg 9"));
	ck_assert_ptr_nonnull(strstr(err, "shard 4"));
	printf("checksum error text: %s\n", err);
	/* A range in the damaged block fails; one outside it reads fine. */
	ck_assert_int_eq(get_sync(&h, &k, 2 * 65536 + 1000, 500, &out, err), IOL_ECHECKSUM);
	ck_assert_int_eq(get_sync(&h, &k, 0, 2 * 65536, &out, err), 0);
	ck_assert(memcmp(buf_slice_data(&out), d, 2 * 65536) == 0);
	buf_unref(out.buf);
	ck_assert_int_eq(get_sync(&h, &k, 3 * 65536, UINT64_MAX, &out, err), 0);
	ck_assert(memcmp(buf_slice_data(&out), d + 3 * 65536, len - 3 * 65536) == 0);
	buf_unref(out.buf);
	struct store_stats ss;
	store_stats(h.s, &ss);
	ck_assert_uint_eq(ss.checksum_errors, 2);
	free(d);
	h_fini(&h);
}
END_TEST

START_TEST(enospc_keeps_data)
{
	struct h h;
	/* 1 MiB superblock area + 2 MiB data = 512 blocks. */
	h_init(&h, "ns", 3 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	uint8_t *d[16];
	struct store_key k[16];
	int stored = 0;
	int rc = 0;
	for (int i = 0; i < 16; i++) {
		char oid[32];
		snprintf(oid, sizeof(oid), "fill-%d", i);
		k[i] = key_of(1, oid, 0);
		d[i] = pattern(300000, (uint32_t)i);
		rc = put_sync(&h, &k[i], d[i], 300000);
		if (rc)
			break;
		stored++;
	}
	ck_assert_int_eq(rc, IOL_ENO_SPACE);
	ck_assert_int_eq(stored, 512 / 74);
	struct store_space sp;
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, (uint64_t)stored * 74 * 4096);
	/* Overwriting an existing shard when full also fails cleanly. */
	ck_assert_int_eq(put_sync(&h, &k[0], d[stored], 300000), IOL_ENO_SPACE);
	/* Small shards still fit inline. */
	struct store_key small = key_of(1, "small", 0);
	ck_assert_int_eq(put_sync(&h, &small, (const uint8_t *)"tiny", 4), 0);
	for (int i = 0; i < stored; i++)
		expect_shard(&h, &k[i], d[i], 300000);
	struct store_space sp2;
	store_space(h.s, &sp2);
	sp.inline_bytes += 4; /* the data area is unchanged; the index holds 4 more */
	ck_assert_mem_eq(&sp, &sp2, sizeof(sp));
	/* Delete one: the put now fits. */
	ck_assert_int_eq(del_sync(&h, &k[0]), 0);
	ck_assert_int_eq(put_sync(&h, &k[stored], d[stored], 300000), 0);
	expect_shard(&h, &k[stored], d[stored], 300000);
	for (int i = 0; i <= stored && i < 16; i++)
		free(d[i]);
	h_fini(&h);
}
END_TEST

/* Many puts of one key in flight at once: the index ends with one of
 * them, and exactly its blocks are used (no leak, no double free). */
struct cput {
	struct store_put_req req;
	struct done d;
};

START_TEST(concurrent_overwrites)
{
	struct h h;
	h_init(&h, "co", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	struct store_key k = key_of(3, "hot", 0);
	enum { N = 24 };
	static struct cput c[N];
	uint8_t *d[N];
	for (int i = 0; i < N; i++) {
		size_t len = i % 3 == 0 ? 5000 : 100000 + (size_t)i * 4096;
		d[i] = pattern(len, (uint32_t)i + 100);
		memset(&c[i], 0, sizeof(c[i]));
		c[i].req.data = &c[i].d;
		struct buf *b = buf_copy(d[i], len);
		ck_assert_int_eq(store_put(h.s, &c[i].req, &k, (struct buf_slice){ b, 0, len }, put_cb), 0);
		buf_unref(b);
	}
	for (int i = 0; i < N; i++)
		run_until(&h, &c[i].d);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(c[i].d.status, 0);
	struct store_stat st;
	ck_assert_int_eq(store_stat(h.s, &k, &st), 0);
	int winner = -1;
	for (int i = 0; i < N; i++) {
		size_t len = i % 3 == 0 ? 5000 : 100000 + (size_t)i * 4096;
		if (len == st.length && crc32c(0, d[i], len) == st.crc)
			winner = i;
	}
	ck_assert_int_ge(winner, 0);
	struct store_space sp;
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.used_bytes, (uint64_t)st.blocks * 4096);
	expect_space_consistent(&h);
	h_close(&h);
	ck_assert_int_eq(h_open(&h), 0);
	struct store_space sp2;
	store_space(h.s, &sp2);
	ck_assert_uint_eq(sp2.used_bytes, sp.used_bytes);
	for (int i = 0; i < N; i++)
		free(d[i]);
	h_fini(&h);
}
END_TEST

START_TEST(refusals)
{
	struct h h;
	h_init(&h, "rf", 0); /* no size: must not create */
	ck_assert_int_eq(h_open(&h), -ENOENT);
	ck_assert_int_eq(access(h.dev, F_OK), -1);
	h.o.create_size = 16 << 20;
	ck_assert_int_eq(h_open(&h), 0);
	h_close(&h);
	/* Another OSD id: refused. */
	h.o.osd_id = 4;
	ck_assert_int_eq(h_open(&h), IOL_ECONFLICT);
	h.o.osd_id = 3;
	/* Lost meta dir: refused, not silently empty. */
	rm_meta(h.meta);
	ck_assert_int_eq(h_open(&h), IOL_ECONFLICT);
	/* A reformat (format+force over our own device keeps it; a fresh
	 * device file with a stale meta dir is refused). */
	h.o.format = true;
	h.o.force = true;
	ck_assert_int_eq(h_open(&h), IOL_ECONFLICT); /* ours, so not reformatted */
	h_fini(&h);
}
END_TEST

/* A slice of whole 4 KiB-aligned blocks is written from where it is,
 * under the store's reference until written (no copy); anything else is
 * copied, so the caller's buffer is free the moment store_put returns.
 * Both read back as put, and after a restart. */
START_TEST(aligned_slice_by_reference)
{
	struct h h;
	h_init(&h, "ref", 64 << 20);
	ck_assert_int_eq(h_open(&h), 0);
	static const struct { size_t off, len; bool by_ref; } cases[] = {
		{ 4096, 128 << 10, true },    /* whole aligned blocks */
		{ 4096, 1 << 20, true },
		{ 4096, (128 << 10) + 1, false }, /* a partial last block */
		{ 64, 128 << 10, false },      /* not on a page */
	};
	uint8_t *want[4];
	for (unsigned i = 0; i < 4; i++) {
		size_t off = cases[i].off, len = cases[i].len;
		struct buf *b = buf_new_aligned(off + len, 4096);
		want[i] = pattern(len, 40 + i);
		memcpy(b->data + off, want[i], len);
		b->len = off + len;
		char oid[16];
		snprintf(oid, sizeof(oid), "ref-%u", i);
		struct store_key k = key_of(7, oid, 0);
		struct store_put_req req = { 0 };
		struct done d = { 0 };
		req.data = &d;
		ck_assert_int_eq(store_put(h.s, &req, &k, (struct buf_slice){ b, off, len }, put_cb), 0);
		ck_assert_uint_eq(atomic_load(&b->refs), cases[i].by_ref ? 2 : 1);
		run_until(&h, &d);
		ck_assert_int_eq(d.status, 0);
		ck_assert_uint_eq(atomic_load(&b->refs), 1); /* let go once written */
		ck_assert_uint_eq(req.crc, crc32c(0, want[i], len));
		buf_unref(b);
		expect_shard(&h, &k, want[i], len);
	}
	h_close(&h);
	ck_assert_int_eq(h_open(&h), 0);
	for (unsigned i = 0; i < 4; i++) {
		char oid[16];
		snprintf(oid, sizeof(oid), "ref-%u", i);
		struct store_key k = key_of(7, oid, 0);
		expect_shard(&h, &k, want[i], cases[i].len);
		free(want[i]);
	}
	h_fini(&h);
}
END_TEST

/* ---- loop device */

static int sh(const char *cmd, char *out, size_t outlen)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = out ? fread(out, 1, outlen - 1, p) : 0;
	if (out) {
		out[n] = '\0';
		char *nl = strchr(out, '\n');
		if (nl)
			*nl = '\0';
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char loopdev[64];
static char loopfile[160];

static void loop_teardown(void)
{
	char cmd[256];
	if (loopdev[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d %s 2>/dev/null", loopdev);
		sh(cmd, NULL, 0);
		loopdev[0] = '\0';
	}
	if (loopfile[0])
		unlink(loopfile);
}

/* Set up in the runner (unchecked fixture) so the runner detaches it even
 * when the forked test fails or is killed by its timeout. */
static void loop_setup(void)
{
	setup_once();
	loopdev[0] = '\0';
	if (sh("command -v losetup >/dev/null 2>&1", NULL, 0) != 0)
		return;
	snprintf(loopfile, sizeof(loopfile), "%s-loop.img", base);
	int fd = open(loopfile, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;
	if (ftruncate(fd, 64 << 20) != 0) { /* sparse */
		close(fd);
		return;
	}
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "losetup --find --show --direct-io=on %s", loopfile);
	int rc = sh(cmd, loopdev, sizeof(loopdev));
	if (rc != 0 || strncmp(loopdev, "/dev/loop", 9) != 0) {
		printf("losetup failed: '%s' (rc %d, out '%s')\n", cmd, rc, loopdev);
		loopdev[0] = '\0';
	}
}

/* Two stores opened with one store_cache read their flushed inline shards
 * through it: the cache's usage grows by both (a store with its own cache
 * would leave it at zero). */
START_TEST(shared_cache_holds_both_stores_blocks)
{
	struct store_cache *c;
	ck_assert_int_eq(store_cache_new(8 << 20, &c), 0);
	rocksdb_cache_t *rc = store_cache_rocksdb(c);
	ck_assert_uint_eq(rocksdb_cache_get_capacity(rc), 8 << 20);
	struct h h1, h2;
	h_init(&h1, "c1", 64 << 20);
	h_init(&h2, "c2", 64 << 20);
	h1.o.cache = h2.o.cache = c;
	ck_assert_int_eq(h_open(&h1), 0);
	ck_assert_int_eq(h_open(&h2), 0);
	struct store_key k = key_of(4, "cached", 1);
	uint8_t *a = pattern(16 << 10, 7), *b = pattern(16 << 10, 8);
	ck_assert_int_eq(put_sync(&h1, &k, a, 16 << 10), 0);
	ck_assert_int_eq(put_sync(&h2, &k, b, 16 << 10), 0);
	/* A clean close flushes the memtable: the shards are in table files. */
	h_close(&h1);
	h_close(&h2);
	ck_assert_int_eq(h_open(&h1), 0);
	ck_assert_int_eq(h_open(&h2), 0);
	expect_shard(&h1, &k, a, 16 << 10);
	expect_shard(&h2, &k, b, 16 << 10);
	/* Both stores' blocks holding a 16 KiB shard (open's index scan or
	 * the read put them there). */
	size_t used = rocksdb_cache_get_usage(rc);
	ck_assert_msg(used >= 2 * (16 << 10), "shared cache holds %zu bytes", used);
	h_fini(&h1);
	h_fini(&h2);
	store_cache_free(c);
	free(a);
	free(b);
}
END_TEST

/* store_get_now serves what is in memory and leaves the rest: an inline
 * shard in the memtable; not an extent (device), not a record whose table
 * block is out of the cache (a 1 MiB cache after 3 MiB of inline shards
 * were flushed): -EWOULDBLOCK, and store_get then reads it. */
START_TEST(get_now_only_from_memory)
{
	struct store_cache *c;
	ck_assert_int_eq(store_cache_new(1 << 20, &c), 0);
	struct h h;
	h_init(&h, "gn", 64 << 20);
	h.o.cache = c;
	ck_assert_int_eq(h_open(&h), 0);
	enum { N = 192 };
	uint8_t *d[N];
	struct store_key k[N];
	for (int i = 0; i < N; i++) {
		char oid[16];
		snprintf(oid, sizeof(oid), "gn-%03d", i);
		k[i] = key_of(5, oid, 0);
		d[i] = pattern(16 << 10, 100 + (uint32_t)i);
		ck_assert_int_eq(put_sync(&h, &k[i], d[i], 16 << 10), 0);
	}
	uint8_t *big = pattern(256 << 10, 99);
	struct store_key kb = key_of(5, "gn-big", 0);
	ck_assert_int_eq(put_sync(&h, &kb, big, 256 << 10), 0);
	struct store_get_req req = { 0 };
	/* In the memtable. */
	ck_assert_int_eq(store_get_now(h.s, &req, &k[3], 0, UINT64_MAX), 0);
	ck_assert_uint_eq(req.out.len, 16 << 10);
	ck_assert(memcmp(buf_slice_data(&req.out), d[3], 16 << 10) == 0);
	ck_assert_uint_eq(req.stat.crc, crc32c(0, d[3], 16 << 10));
	buf_unref(req.out.buf);
	ck_assert_int_eq(store_get_now(h.s, &req, &k[3], 100, 10), 0);
	ck_assert_uint_eq(req.out.len, 10);
	ck_assert(memcmp(buf_slice_data(&req.out), d[3] + 100, 10) == 0);
	buf_unref(req.out.buf);
	ck_assert_int_eq(store_get_now(h.s, &req, &kb, 0, UINT64_MAX), -EWOULDBLOCK);
	ck_assert_ptr_null(req.out.buf);
	struct store_key nok = key_of(5, "gn-none", 0);
	ck_assert_int_eq(store_get_now(h.s, &req, &nok, 0, 1), IOL_ENOT_FOUND);
	struct store_stats st;
	store_stats(h.s, &st);
	ck_assert_uint_eq(st.gets, 2);

	/* Flushed, and most of it evicted from the 1 MiB cache. */
	h_close(&h);
	ck_assert_int_eq(h_open(&h), 0);
	int now = 0, later = 0;
	for (int i = 0; i < N; i++) {
		int rc = store_get_now(h.s, &req, &k[i], 0, UINT64_MAX);
		if (rc == 0) {
			ck_assert(memcmp(buf_slice_data(&req.out), d[i], 16 << 10) == 0);
			buf_unref(req.out.buf);
			now++;
		} else {
			ck_assert_int_eq(rc, -EWOULDBLOCK);
			expect_shard(&h, &k[i], d[i], 16 << 10);
			later++;
		}
	}
	printf("get_now after reopen, 1 MiB cache: %d from memory, %d left to the loop\n", now,
	       later);
	ck_assert_int_gt(later, 0);
	for (int i = 0; i < N; i++)
		free(d[i]);
	free(big);
	h_fini(&h);
	store_cache_free(c);
}
END_TEST

START_TEST(loop_device_round_trip_restart)
{
	if (!loopdev[0]) {
		printf("SKIP loop device test: losetup unavailable or failed (see above)\n");
		return;
	}
	printf("loop device test on %s over %s\n", loopdev, loopfile);
	struct h h;
	h_init(&h, "lp", 0);
	h.o.device_path = loopdev;
	/* A raw device without a superblock is refused without --format. */
	ck_assert_int_eq(h_open(&h), IOL_ENOT_FOUND);
	h.o.format = true;
	ck_assert_int_eq(h_open(&h), 0);
	h.o.format = false;
	struct store_space sp;
	store_space(h.s, &sp);
	ck_assert_uint_eq(sp.total_bytes, (64 << 20) - STORE_DATA_OFF);
	round_trip_restart(&h);
	h.o.device_path = h.dev; /* so h_fini unlinks a test path, not the node */
	h_fini(&h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/store");
	TCase *tc = tcase_create("store");
	tcase_add_unchecked_fixture(tc, setup_once, teardown_once);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, file_round_trip_restart);
	tcase_add_test(tc, overwrite_and_delete);
	tcase_add_test(tc, list_and_stat_many);
	tcase_add_test(tc, flipped_byte_is_checksum_error);
	tcase_add_test(tc, enospc_keeps_data);
	tcase_add_test(tc, concurrent_overwrites);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, aligned_slice_by_reference);
	tcase_add_test(tc, shared_cache_holds_both_stores_blocks);
	tcase_add_test(tc, get_now_only_from_memory);
	suite_add_tcase(s, tc);
	TCase *tl = tcase_create("loopdev");
	/* Unchecked: runs in the runner, so the loop device is detached even
	 * when the forked test fails or is killed by its timeout. */
	tcase_add_unchecked_fixture(tl, loop_setup, loop_teardown);
	tcase_set_timeout(tl, 60);
	tcase_add_test(tl, loop_device_round_trip_restart);
	suite_add_tcase(s, tl);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
