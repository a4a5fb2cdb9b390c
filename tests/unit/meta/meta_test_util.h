/*
 * meta_test_util.h — helpers shared by the meta unit tests: temp dirs
 * under /dev/shm, free port pairs for members, and a builder that turns
 * ops into framed Raft entries.
 * Header-only (static functions) so the Makefile's one-source-per-test
 * rule still holds.
 */
#ifndef TESTS_UNIT_META_TEST_UTIL_H
#define TESTS_UNIT_META_TEST_UTIL_H

#include <check.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "meta/state.h"
#include "tests/lib/scratch.h"

static inline int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory in the test's scratch dir (tests/lib/scratch.h);
 * the caller rm_rf's it. */
static inline void tmpdir(char out[64])
{
	ck_assert_int_lt(test_scratch_path(out, 64, "iolake-meta-XXXXXX"), 64);
	ck_assert_ptr_nonnull(mkdtemp(out));
}

/* Whether port p on 127.0.0.1 can be bound now. */
/* A meta_state on dir with the default options; the test fails if it
 * does not open. */
static inline struct meta_state *open_at(const char *dir)
{
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	return s;
}

/* Without SO_REUSEADDR: a port some socket is bound to, listening or not
 * yet (a member binds its ports before it listens, and two sockets with
 * SO_REUSEADDR may share a port until one listens), or that a closed
 * connection keeps in TIME_WAIT, is not free. */
static inline bool bindable(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A port p with p and p + 1 both free on 127.0.0.1 (a member's RPC and
 * Raft ports), drawn at random below the kernel's ephemeral range
 * (32768-60999 here): a port the kernel hands out may be taken by any
 * outgoing connection between this check and the member's bind (another
 * member's, or another test's running beside this one), which failed a
 * member's start with EIO now and then. A pair this process handed out
 * before is never handed out again: its member may have bound it and not
 * yet listened, or may start again on it later (a restart keeps its
 * address). */
static inline int free_port_pair(void)
{
	static unsigned seed;
	static int issued[256];
	static unsigned n_issued;
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16)) | 1;
	}
	for (int i = 0; i < 1000; i++) {
		seed = seed * 1103515245u + 12345u;
		int p = 20000 + (int)((seed >> 8) % 12000);   /* 20000..31999 */
		bool taken = false;
		for (unsigned j = 0; j < n_issued && j < 256 && !taken; j++)
			taken = p + 1 >= issued[j] && p <= issued[j] + 1;
		if (taken || !bindable(p) || !bindable(p + 1))
			continue;
		issued[n_issued++ % 256] = p;
		return p;
	}
	ck_abort_msg("no free port pair");
	return 0;
}

/* Builds one OpBatch; every allocation is recorded and freed by tb_free. */
#define TB_MAX_OPS 4096
#define TB_MAX_ALLOC (TB_MAX_OPS * 8)
struct tb {
	Iolake__Meta__OpBatch b;
	Iolake__Meta__Op *ops[TB_MAX_OPS];
	void *alloc[TB_MAX_ALLOC];
	size_t n_alloc;
};

static inline void *tb_alloc(struct tb *t, size_t n)
{
	ck_assert_uint_lt(t->n_alloc, TB_MAX_ALLOC);
	void *p = calloc(1, n);
	ck_assert_ptr_nonnull(p);
	t->alloc[t->n_alloc++] = p;
	return p;
}

static inline char *tb_str(struct tb *t, const char *s)
{
	char *p = tb_alloc(t, strlen(s) + 1);
	memcpy(p, s, strlen(s));
	return p;
}

static inline struct tb *tb_new(void)
{
	struct tb *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	iolake__meta__op_batch__init(&t->b);
	t->b.ops = t->ops;
	return t;
}

static inline void tb_free(struct tb *t)
{
	for (size_t i = 0; i < t->n_alloc; i++)
		free(t->alloc[i]);
	free(t);
}

static inline Iolake__Meta__Op *tb_op(struct tb *t, uint64_t client, uint64_t req)
{
	ck_assert_uint_lt(t->b.n_ops, TB_MAX_OPS);
	Iolake__Meta__Op *op = tb_alloc(t, sizeof(*op));
	iolake__meta__op__init(op);
	op->client_id = client;
	op->request_id = req;
	t->ops[t->b.n_ops++] = op;
	return op;
}

/* An InitMap op: pg_count PGs (0: the default), k + m, a down OSD keeping
 * its slots; the caller sets any other field. */
static inline Iolake__Meta__InitMap *tb_init_map(struct tb *t, uint32_t pg_count, uint32_t k,
						 uint32_t m)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	op->body_case = IOLAKE__META__OP__BODY_INIT_MAP;
	op->init_map = tb_alloc(t, sizeof(*op->init_map));
	iolake__meta__init_map__init(op->init_map);
	op->init_map->pg_count = pg_count;
	op->init_map->k = k;
	op->init_map->m = m;
	op->init_map->down_keeps_slot = true;
	return op->init_map;
}

static inline void tb_create_bucket(struct tb *t, uint64_t c, uint64_t r, const char *name,
			     const char *owner)
{
	Iolake__Meta__Op *op = tb_op(t, c, r);
	Iolake__Meta__CreateBucket *cb = tb_alloc(t, sizeof(*cb));
	Iolake__Meta__Bucket *b = tb_alloc(t, sizeof(*b));
	iolake__meta__create_bucket__init(cb);
	iolake__meta__bucket__init(b);
	b->name = tb_str(t, name);
	b->owner = tb_str(t, owner);
	b->created_ms = 1700000000000ULL + r;
	cb->bucket = b;
	op->body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op->create_bucket = cb;
}

static inline void tb_delete_bucket(struct tb *t, uint64_t c, uint64_t r, const char *name)
{
	Iolake__Meta__Op *op = tb_op(t, c, r);
	Iolake__Meta__DeleteBucket *d = tb_alloc(t, sizeof(*d));
	iolake__meta__delete_bucket__init(d);
	d->name = tb_str(t, name);
	op->body_case = IOLAKE__META__OP__BODY_DELETE_BUCKET;
	op->delete_bucket = d;
}

/* An object record; with segments when size > inline (4096). */
static inline Iolake__Meta__PutObject *tb_put(struct tb *t, uint64_t c, uint64_t r, const char *bucket,
				       const char *key, uint64_t size)
{
	Iolake__Meta__Op *op = tb_op(t, c, r);
	Iolake__Meta__PutObject *p = tb_alloc(t, sizeof(*p));
	Iolake__Meta__ObjectRecord *rec = tb_alloc(t, sizeof(*rec));
	iolake__meta__put_object__init(p);
	iolake__meta__object_record__init(rec);
	rec->bucket = tb_str(t, bucket);
	rec->key = tb_str(t, key);
	rec->size = size;
	rec->etag = tb_str(t, "d41d8cd98f00b204e9800998ecf8427e");
	rec->content_type = tb_str(t, "application/octet-stream");
	rec->mtime_ms = 1700000000000ULL + r;
	if (size > 4096) {
		Iolake__Meta__Segment *s = tb_alloc(t, sizeof(*s));
		iolake__meta__segment__init(s);
		s->length = size;
		s->shard_id = r;
		rec->n_segments = 1;
		rec->segments = tb_alloc(t, sizeof(*rec->segments));
		rec->segments[0] = s;
	} else if (size) {
		rec->inline_data.len = size;
		rec->inline_data.data = tb_alloc(t, size);
		memset(rec->inline_data.data, 'x', size);
	}
	p->record = rec;
	op->body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op->put_object = p;
	return p;
}

static inline Iolake__Meta__DeleteObject *tb_delete(struct tb *t, uint64_t c, uint64_t r,
					     const char *bucket, const char *key)
{
	Iolake__Meta__Op *op = tb_op(t, c, r);
	Iolake__Meta__DeleteObject *d = tb_alloc(t, sizeof(*d));
	iolake__meta__delete_object__init(d);
	d->bucket = tb_str(t, bucket);
	d->key = tb_str(t, key);
	op->body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op->delete_object = d;
	return d;
}

/* CreateMultipart of bucket/key; the upload, to set more fields on. */
static inline Iolake__Meta__MultipartUpload *tb_create_upload(struct tb *t, const char *bucket,
							     const char *key)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__CreateMultipart *cm = tb_alloc(t, sizeof(*cm));
	Iolake__Meta__MultipartUpload *u = tb_alloc(t, sizeof(*u));
	iolake__meta__create_multipart__init(cm);
	iolake__meta__multipart_upload__init(u);
	u->bucket = tb_str(t, bucket);
	u->key = tb_str(t, key);
	cm->upload = u;
	op->body_case = IOLAKE__META__OP__BODY_CREATE_MULTIPART;
	op->create_multipart = cm;
	return u;
}

/* PutPart num of upload_id on mpb/big (shard_id 1000 + num); the part's
 * segment, to set more fields on. */
static inline Iolake__Meta__Segment *tb_part(struct tb *t, const char *upload_id, uint32_t num,
					     uint64_t size, const char *etag)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__PutPart *pp = tb_alloc(t, sizeof(*pp));
	Iolake__Meta__Part *p = tb_alloc(t, sizeof(*p));
	Iolake__Meta__Segment *seg = tb_alloc(t, sizeof(*seg));
	iolake__meta__put_part__init(pp);
	iolake__meta__part__init(p);
	iolake__meta__segment__init(seg);
	seg->length = size;
	seg->shard_id = 1000 + num;
	p->part_number = num;
	p->size = size;
	p->etag = tb_str(t, etag);
	p->segment = seg;
	pp->bucket = tb_str(t, "mpb");
	pp->key = tb_str(t, "big");
	pp->upload_id = tb_str(t, upload_id);
	pp->part = p;
	op->body_case = IOLAKE__META__OP__BODY_PUT_PART;
	op->put_part = pp;
	return seg;
}

/* CompleteMultipart of upload_id on mpb/big with n (number, etag) parts. */
static inline void tb_complete(struct tb *t, const char *upload_id, const uint32_t *nums,
			       const char *const *etags, size_t n)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__CompleteMultipart *c = tb_alloc(t, sizeof(*c));
	iolake__meta__complete_multipart__init(c);
	c->bucket = tb_str(t, "mpb");
	c->key = tb_str(t, "big");
	c->upload_id = tb_str(t, upload_id);
	c->time_ms = 1700000000000ULL;
	c->n_parts = n;
	c->parts = tb_alloc(t, n * sizeof(*c->parts));
	for (size_t i = 0; i < n; i++) {
		c->parts[i] = tb_alloc(t, sizeof(**c->parts));
		iolake__meta__part_ref__init(c->parts[i]);
		c->parts[i]->part_number = nums[i];
		c->parts[i]->etag = tb_str(t, etags[i]);
	}
	op->body_case = IOLAKE__META__OP__BODY_COMPLETE_MULTIPART;
	op->complete_multipart = c;
}

/* Frame the batch (malloc'd, caller frees). */
static inline uint8_t *tb_encode(struct tb *t, size_t *len)
{
	size_t n = meta_state_entry_size(&t->b);
	uint8_t *e = malloc(n);
	ck_assert_ptr_nonnull(e);
	long w = meta_state_entry_encode(&t->b, e, n);
	ck_assert_int_eq(w, (long)n);
	ck_assert_uint_eq(n % 8, 0);
	*len = n;
	return e;
}

/* Encode, apply at index, free the builder; returns apply's value. */
static inline int tb_apply(struct meta_state *s, uint64_t index, struct tb *t, struct meta_op_result *res)
{
	size_t len;
	uint8_t *e = tb_encode(t, &len);
	int rc = meta_state_apply(s, index, e, len, res, META_BATCH_MAX_OPS);
	free(e);
	tb_free(t);
	return rc;
}

#endif
