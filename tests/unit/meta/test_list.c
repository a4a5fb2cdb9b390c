/*
 * test_list.c — S3 listing over 100,000 object records in real RocksDB,
 * compared against a model: a sorted array of keys and the S3 rules
 * written the plain way (filter, roll up, dedupe, paginate). Random
 * prefixes, delimiters, start-after and max-keys; every query is walked
 * page by page with continuation tokens (and some with V1 markers), and
 * each page and the whole traversal must equal the model.
 *
 * The same for ListMultipartUploads (meta_list_uploads): 3,000 uploads
 * over keys that repeat, random prefixes, delimiters, key / upload-id
 * markers and page sizes, walked with the markers each page hands back.
 *
 * Seed printed; replay with IOLAKE_TEST_SEED=<seed>. IOLAKE_LIST_QUERIES
 * changes the number of queries (default 200).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "meta/list.h"
#include "meta/state.h"
#include "meta_test_util.h"

#define N_KEYS 100000

static char **keys;      /* sorted, unique */
static size_t n_keys;
static struct meta_op_result res[META_BATCH_MAX_OPS];

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);   /* byte order */
}

/* Keys from a few shapes and levels, some with multi-byte UTF-8. */
static char *gen_key(unsigned i)
{
	static const char *hosts[] = { "web1", "web2", "db", "cache" };
	static const char *tops[] = { "a/b/c-", "a/b/d/", "a/bb-", "a-", "z/", "\xc3\xa9t\xc3\xa9/" };
	char buf[256];
	switch (rand() % 6) {
	case 0:
		snprintf(buf, sizeof(buf), "photos/%04d/%02d/img%06u.jpg", 2019 + rand() % 6,
			 1 + rand() % 12, i);
		break;
	case 1:
		snprintf(buf, sizeof(buf), "logs/%s/%u.log", hosts[rand() % 4], i);
		break;
	case 2:
		snprintf(buf, sizeof(buf), "%s%u", tops[rand() % 6], i);
		break;
	case 3:
		snprintf(buf, sizeof(buf), "flat%06u", i);
		break;
	case 4:
		snprintf(buf, sizeof(buf), "deep/%c/%c/%c/%u", 'a' + rand() % 3, 'a' + rand() % 3,
			 'a' + rand() % 3, i);
		break;
	default:
		snprintf(buf, sizeof(buf), "a/b/c-%u/x/y", i);
		break;
	}
	return strdup(buf);
}

static void load(struct meta_state *s)
{
	keys = malloc(N_KEYS * sizeof(*keys));
	uint64_t idx = 1;
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "listb", "alice");
	tb_create_bucket(t, 0, 0, "lista", "alice");   /* neighbours must not leak in */
	tb_create_bucket(t, 0, 0, "listc", "alice");
	tb_put(t, 0, 0, "lista", "photos/zzz", 1);
	tb_put(t, 0, 0, "listc", "a", 1);
	for (unsigned i = 0; i < N_KEYS; i++) {
		keys[i] = gen_key(i);
		tb_put(t, 0, 0, "listb", keys[i], 1 + i % 100);
		if (t->b.n_ops == 1000) {
			ck_assert_int_eq(tb_apply(s, idx++, t, res), 1000);
			t = tb_new();
		}
	}
	if (t->b.n_ops)
		ck_assert_int_ge(tb_apply(s, idx++, t, res), 1);
	else
		tb_free(t);
	n_keys = N_KEYS;
	qsort(keys, n_keys, sizeof(*keys), cmp_str);
}

struct ent {
	const char *name;   /* a key, or a prefix owned by the model list */
	size_t len;
	bool is_prefix;
};

/* The model: the whole listing for (prefix, delim, marker). */
static size_t model(const char *prefix, const char *delim, const char *marker, struct ent *outv,
		    char **owned, size_t *n_owned)
{
	size_t plen = strlen(prefix), dlen = strlen(delim), n = 0;
	for (size_t i = 0; i < n_keys; i++) {
		const char *k = keys[i];
		if (strncmp(k, prefix, plen) != 0 || strcmp(k, marker) <= 0)
			continue;
		const char *d = dlen ? strstr(k + plen, delim) : NULL;
		if (!d) {
			outv[n++] = (struct ent){ k, strlen(k), false };
			continue;
		}
		size_t cl = (size_t)(d - k) + dlen;
		char *cp = strndup(k, cl);
		if (strcmp(cp, marker) <= 0 ||
		    (n && outv[n - 1].is_prefix && strcmp(outv[n - 1].name, cp) == 0)) {
			free(cp);
			continue;
		}
		owned[(*n_owned)++] = cp;
		outv[n++] = (struct ent){ cp, cl, true };
	}
	return n;
}

static const char *pick_prefix(void)
{
	static char buf[256];
	static const char *fixed[] = { "", "", "a", "a/", "a/b/", "a/b/c", "photos/", "photos/2021/",
				       "logs/", "deep/a/", "nothing/", "\xc3", "z", "flat0" };
	int r = rand() % 3;
	if (r == 0)
		return fixed[rand() % (sizeof(fixed) / sizeof(fixed[0]))];
	const char *k = keys[rand() % n_keys];
	size_t l = (size_t)rand() % (strlen(k) + 1);
	if (r == 1) {
		/* Cut right after a '/' so the prefix is a "directory". */
		const char *slash = strchr(k + (l < strlen(k) ? l : 0), '/');
		l = slash ? (size_t)(slash - k) + 1 : l;
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)l, k);
	return buf;
}

static unsigned pick_max(size_t total)
{
	static const unsigned choices[] = { 1, 2, 3, 7, 10, 50, 100, 333, 999, 1000, 1500 };
	unsigned m = choices[rand() % (sizeof(choices) / sizeof(choices[0]))];
	/* Keep the number of pages bounded (runtime). */
	while (total / m > 300)
		m *= 10;
	return m;
}

static void check_query(struct meta_state *s, const char *prefix, const char *delim,
			const char *start_after, unsigned max, bool v1, struct ent *exp,
			char **owned)
{
	size_t n_owned = 0;
	size_t n_exp = model(prefix, delim, start_after ? start_after : "", exp, owned, &n_owned);
	unsigned eff = max > META_LIST_MAX_KEYS ? META_LIST_MAX_KEYS : max;
	size_t got = 0, pages = 0;
	char token[META_LIST_TOKEN_MAX] = "";
	char marker[META_KEY_MAX + 1];
	snprintf(marker, sizeof(marker), "%s", start_after ? start_after : "");
	for (;;) {
		struct meta_list_req q = { .bucket = "listb", .prefix = prefix, .delimiter = delim,
					   .max_keys = max, .want_records = pages % 7 == 0 };
		if (v1 || pages == 0)
			q.start_after = marker;
		if (!v1 && pages > 0)
			q.token = token;
		struct meta_list_page p;
		int rc = meta_list(s, &q, &p);
		ck_assert_int_eq(rc, 0);
		pages++;
		ck_assert_uint_le(p.n, eff);
		for (size_t i = 0; i < p.n; i++, got++) {
			ck_assert_msg(got < n_exp, "more entries than the model (%zu)", n_exp);
			const struct meta_list_entry *e = &p.entries[i];
			ck_assert_msg(e->is_prefix == exp[got].is_prefix &&
					      e->name_len == exp[got].len &&
					      memcmp(e->name, exp[got].name, e->name_len) == 0,
				      "entry %zu: got %s%s, want %s%s (prefix '%s' delim '%s' "
				      "start-after '%s' max %u)",
				      got, e->name, e->is_prefix ? " (cp)" : "", exp[got].name,
				      exp[got].is_prefix ? " (cp)" : "", prefix, delim,
				      start_after ? start_after : "", max);
			if (e->rec) {
				ck_assert_str_eq(e->rec->key, e->name);
				ck_assert(!e->is_prefix);
			}
		}
		if (p.truncated) {
			ck_assert_uint_eq(p.n, eff);      /* a truncated page is full */
			ck_assert_msg(got < n_exp, "truncated but the model has no more");
			ck_assert(p.next_token[0]);
			strcpy(token, p.next_token);
			snprintf(marker, sizeof(marker), "%s", p.entries[p.n - 1].name);
		}
		bool more = p.truncated;
		meta_list_page_free(&p);
		if (!more)
			break;
	}
	ck_assert_msg(got == n_exp, "got %zu entries, model %zu (prefix '%s' delim '%s' max %u)",
		      got, n_exp, prefix, delim, max);
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
}

START_TEST(test_list_model)
{
	unsigned seed = (unsigned)time(NULL);
	const char *env = getenv("IOLAKE_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 10);
	printf("test_list_model seed=%u (replay: IOLAKE_TEST_SEED=%u)\n", seed, seed);
	srand(seed);
	int queries = 200;
	if (getenv("IOLAKE_LIST_QUERIES"))
		queries = atoi(getenv("IOLAKE_LIST_QUERIES"));

	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	clock_t t0 = clock();
	load(s);
	printf("loaded %zu records in %.1f s cpu\n", n_keys, (double)(clock() - t0) / CLOCKS_PER_SEC);

	struct ent *exp = malloc(n_keys * sizeof(*exp));
	char **owned = malloc(n_keys * sizeof(*owned));
	static const char *delims[] = { "", "/", "/", "-", "/b", "\xa9" };
	t0 = clock();
	for (int qn = 0; qn < queries; qn++) {
		const char *prefix = pick_prefix();
		char pbuf[256];
		snprintf(pbuf, sizeof(pbuf), "%s", prefix);
		const char *delim = delims[rand() % 6];
		const char *start_after = NULL;
		char sbuf[256];
		int sa = rand() % 4;
		if (sa == 1) {
			snprintf(sbuf, sizeof(sbuf), "%s", keys[rand() % n_keys]);
			start_after = sbuf;
		} else if (sa == 2) {
			const char *k = keys[rand() % n_keys];
			snprintf(sbuf, sizeof(sbuf), "%.*s", (int)(rand() % (strlen(k) + 1)), k);
			start_after = sbuf;
		}
		/* Size the page count from a no-delimiter upper bound. */
		size_t total = 0, pl = strlen(pbuf);
		for (size_t i = 0; i < n_keys; i++)
			total += strncmp(keys[i], pbuf, pl) == 0;
		unsigned max = pick_max(total);
		check_query(s, pbuf, delim, start_after, max, rand() % 4 == 0, exp, owned);
	}
	printf("%d queries in %.1f s cpu\n", queries, (double)(clock() - t0) / CLOCKS_PER_SEC);

	/* Edge cases. */
	struct meta_list_req q = { .bucket = "listb", .max_keys = 0 };
	struct meta_list_page p;
	ck_assert_int_eq(meta_list(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 0);
	ck_assert(!p.truncated);
	meta_list_page_free(&p);
	q.max_keys = 5;
	q.token = "!!notbase64";
	ck_assert_int_eq(meta_list(s, &q, &p), -EINVAL);
	meta_list_page_free(&p);
	q.token = "MA";   /* decodes, wrong version byte */
	ck_assert_int_eq(meta_list(s, &q, &p), -EINVAL);
	meta_list_page_free(&p);
	q.token = NULL;
	q.bucket = "nosuchbucket";
	ck_assert_int_eq(meta_list(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 0);
	meta_list_page_free(&p);

	free(owned);
	free(exp);
	for (size_t i = 0; i < n_keys; i++)
		free(keys[i]);
	free(keys);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A common prefix holding many keys is skipped with one seek: listing a
 * bucket of 1 + 50,000 keys with delimiter "/" answers in a few ms. The
 * assertion is on the result; the time is printed. */
START_TEST(test_prefix_skip)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "skipb", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	char k[64];
	uint64_t idx = 2;
	for (int i = 0; i < 50000;) {
		t = tb_new();
		for (int j = 0; j < 2000; j++, i++) {
			snprintf(k, sizeof(k), "dir/%06d", i);
			tb_put(t, 0, 0, "skipb", k, 1);
		}
		ck_assert_int_eq(tb_apply(s, idx++, t, res), 2000);
	}
	t = tb_new();
	tb_put(t, 0, 0, "skipb", "dir0", 1);
	tb_put(t, 0, 0, "skipb", "\xff\xff/x", 1);   /* a prefix with no successor */
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 2);
	struct meta_list_req q = { .bucket = "skipb", .delimiter = "/", .max_keys = 1000 };
	struct meta_list_page p;
	clock_t t0 = clock();
	ck_assert_int_eq(meta_list(s, &q, &p), 0);
	printf("prefix skip: %.2f ms cpu\n", 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC);
	ck_assert_uint_eq(p.n, 3);
	ck_assert_str_eq(p.entries[0].name, "dir/");
	ck_assert(p.entries[0].is_prefix);
	ck_assert_str_eq(p.entries[1].name, "dir0");
	ck_assert(!p.entries[1].is_prefix);
	ck_assert_str_eq(p.entries[2].name, "\xff\xff/");
	ck_assert(!p.truncated);
	meta_list_page_free(&p);
	/* max-keys 1: the prefix counts as one, then the token resumes after
	 * all of it. */
	q.max_keys = 1;
	ck_assert_int_eq(meta_list(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 1);
	ck_assert(p.truncated);
	char tok[META_LIST_TOKEN_MAX];
	strcpy(tok, p.next_token);
	meta_list_page_free(&p);
	q.token = tok;
	ck_assert_int_eq(meta_list(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_str_eq(p.entries[0].name, "dir0");
	meta_list_page_free(&p);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* ------------------------------------------------ ListMultipartUploads */

#define N_UPLOADS 3000

struct up {
	char *key;
	char id[17];
};

static struct up *ups;     /* sorted by (key, id) */
static size_t n_ups;

static int cmp_up(const void *a, const void *b)
{
	const struct up *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : strcmp(x->id, y->id);
}

/* Keys from few pieces, so keys repeat (several uploads of one key) and
 * prefixes nest; spaces, '+' and UTF-8 as url-encoding cases. */
static char *gen_upload_key(void)
{
	static const char *pieces[] = { "a", "b", "a/", "b/", "x/", "/", "c", "+", " ", "\xc3\xa9" };
	char buf[64] = "";
	int n = 1 + rand() % 4;
	for (int i = 0; i < n; i++)
		strcat(buf, pieces[rand() % 10]);
	return strdup(buf);
}

static void load_uploads(struct meta_state *s)
{
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "upb", "alice");
	tb_create_bucket(t, 0, 0, "upa", "alice");   /* a neighbour: must not leak in */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	ups = calloc(N_UPLOADS, sizeof(*ups));
	uint64_t idx = 2;
	for (size_t done = 0; done < N_UPLOADS;) {
		t = tb_new();
		size_t batch = N_UPLOADS - done < 500 ? N_UPLOADS - done : 500;
		for (size_t j = 0; j < batch; j++) {
			ups[done + j].key = gen_upload_key();
			Iolake__Meta__Op *op = tb_op(t, 0, 0);
			Iolake__Meta__CreateMultipart *cm = tb_alloc(t, sizeof(*cm));
			Iolake__Meta__MultipartUpload *u = tb_alloc(t, sizeof(*u));
			iolake__meta__create_multipart__init(cm);
			iolake__meta__multipart_upload__init(u);
			u->bucket = tb_str(t, j % 50 ? "upb" : "upa");
			u->key = tb_str(t, ups[done + j].key);
			cm->upload = u;
			op->body_case = IOLAKE__META__OP__BODY_CREATE_MULTIPART;
			op->create_multipart = cm;
		}
		ck_assert_int_eq(tb_apply(s, idx++, t, res), (int)batch);
		for (size_t j = 0; j < batch; j++) {
			ck_assert_int_eq(res[j].err, 0);
			if (j % 50 == 0) {   /* in "upa": not part of the model */
				free(ups[done + j].key);
				ups[done + j].key = NULL;
				continue;
			}
			strcpy(ups[n_ups].id, res[j].upload_id);
			ups[n_ups++].key = ups[done + j].key;
		}
		done += batch;
	}
	qsort(ups, n_ups, sizeof(*ups), cmp_up);
}

/* One model entry: an upload (u) or a common prefix (cp, owned). */
struct uent {
	const struct up *u;
	char *cp;
};

/* The whole listing the plain way: filter by prefix and marker pair,
 * roll up, dedupe. */
static size_t model_uploads(const char *prefix, const char *delim, const char *km,
			    const char *um, struct uent *out)
{
	size_t plen = strlen(prefix), n = 0;
	for (size_t i = 0; i < n_ups; i++) {
		const struct up *u = &ups[i];
		if (strncmp(u->key, prefix, plen) != 0)
			continue;
		int c = strcmp(u->key, km);
		if (c < 0 || (c == 0 && (!*um || strcmp(u->id, um) <= 0)))
			continue;
		const char *d = *delim ? strstr(u->key + plen, delim) : NULL;
		if (!d) {
			out[n++] = (struct uent){ .u = u };
			continue;
		}
		char *cp = strndup(u->key, (size_t)(d - u->key) + strlen(delim));
		if (strcmp(cp, km) <= 0 || (n && out[n - 1].cp && strcmp(out[n - 1].cp, cp) == 0)) {
			free(cp);
			continue;
		}
		out[n++] = (struct uent){ .cp = cp };
	}
	return n;
}

/* Walk (prefix, delim, km, um) page by page with the markers a page
 * hands back, against the model. */
static void check_uploads(struct meta_state *s, const char *prefix, const char *delim,
			  const char *km0, const char *um0, unsigned max, struct uent *exp)
{
	size_t n_exp = model_uploads(prefix, delim, km0, um0, exp);
	char km[256], um[64];
	snprintf(km, sizeof(km), "%s", km0);
	snprintf(um, sizeof(um), "%s", um0);
	size_t got = 0;
	for (;;) {
		struct meta_list_uploads_req q = { .bucket = "upb", .prefix = prefix,
						   .delimiter = delim, .key_marker = km,
						   .upload_id_marker = um, .max_uploads = max };
		struct meta_list_page p;
		ck_assert_int_eq(meta_list_uploads(s, &q, &p), 0);
		ck_assert_uint_le(p.n, max);
		for (size_t i = 0; i < p.n; i++, got++) {
			const struct meta_list_entry *e = &p.entries[i];
			ck_assert_msg(got < n_exp, "more entries than the model (%zu)", n_exp);
			const struct uent *x = &exp[got];
			if (x->cp) {
				ck_assert_msg(e->is_prefix && strcmp(e->name, x->cp) == 0,
					      "entry %zu: got '%s'%s want cp '%s' (prefix '%s' delim "
					      "'%s' km '%s' um '%s' max %u)",
					      got, e->name, e->is_prefix ? " (cp)" : "", x->cp, prefix,
					      delim, km0, um0, max);
				ck_assert_ptr_null(e->upload);
			} else {
				ck_assert_msg(!e->is_prefix && e->upload &&
						      strcmp(e->upload->key, x->u->key) == 0 &&
						      strcmp(e->upload->upload_id, x->u->id) == 0 &&
						      strcmp(e->name, x->u->key) == 0,
					      "entry %zu: got '%s'%s want '%s' %s (prefix '%s' delim "
					      "'%s' km '%s' um '%s' max %u)",
					      got, e->name, e->is_prefix ? " (cp)" : "", x->u->key,
					      x->u->id, prefix, delim, km0, um0, max);
			}
		}
		bool more = p.truncated;
		if (more) {
			ck_assert_uint_eq(p.n, max);
			ck_assert_msg(got < n_exp, "truncated but the model has no more");
			const struct meta_list_entry *last = &p.entries[p.n - 1];
			snprintf(km, sizeof(km), "%s", last->is_prefix ? last->name : last->upload->key);
			snprintf(um, sizeof(um), "%s", last->is_prefix ? "" : last->upload->upload_id);
		}
		meta_list_page_free(&p);
		if (!more)
			break;
	}
	ck_assert_msg(got == n_exp, "got %zu entries, model %zu (prefix '%s' delim '%s' km '%s' "
		      "um '%s' max %u)", got, n_exp, prefix, delim, km0, um0, max);
	for (size_t i = 0; i < n_exp; i++)
		free(exp[i].cp);
}

START_TEST(test_uploads_model)
{
	unsigned seed = (unsigned)time(NULL);
	const char *env = getenv("IOLAKE_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 10);
	printf("test_uploads_model seed=%u (replay: IOLAKE_TEST_SEED=%u)\n", seed, seed);
	srand(seed);
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	load_uploads(s);
	struct uent *exp = calloc(n_ups, sizeof(*exp));
	static const char *delims[] = { "", "/", "/", "a/", "+", " " };
	static const char *fixed[] = { "", "", "a", "a/", "b/", "x/", "a/a/", "zzz" };
	static const unsigned maxes[] = { 1, 1, 2, 3, 10, 100, 1000 };
	for (int qn = 0; qn < 300; qn++) {
		char prefix[64], km[64] = "", um[64] = "";
		const struct up *r = &ups[rand() % n_ups];
		if (rand() % 2)
			snprintf(prefix, sizeof(prefix), "%s", fixed[rand() % 8]);
		else
			snprintf(prefix, sizeof(prefix), "%.*s", (int)(rand() % (strlen(r->key) + 1)),
				 r->key);
		switch (rand() % 5) {
		case 1:   /* a key alone: after all of its uploads */
			snprintf(km, sizeof(km), "%s", r->key);
			break;
		case 2:   /* a key and one of its upload ids */
			snprintf(km, sizeof(km), "%s", r->key);
			snprintf(um, sizeof(um), "%s", r->id);
			break;
		case 3:   /* a key and an id marker cut short or too long */
			snprintf(km, sizeof(km), "%s", r->key);
			snprintf(um, sizeof(um), rand() % 2 ? "%.5s" : "%sx", r->id);
			break;
		case 4:   /* a key cut anywhere (maybe a common prefix) */
			snprintf(km, sizeof(km), "%.*s", (int)(rand() % (strlen(r->key) + 1)), r->key);
			break;
		default:
			break;
		}
		unsigned max = maxes[rand() % 7];
		if (max == 1 && n_ups > 400 && !*prefix)
			max = 7;   /* bound the pages walked */
		check_uploads(s, prefix, delims[rand() % 6], km, um, max, exp);
	}

	/* Edge cases: max 0, a missing bucket, a key-marker too long. */
	struct meta_list_page p;
	struct meta_list_uploads_req q = { .bucket = "upa", .delimiter = "/", .max_uploads = 0 };
	ck_assert_int_eq(meta_list_uploads(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 0);
	ck_assert(!p.truncated);
	meta_list_page_free(&p);
	q.bucket = "nosuchbucket";
	q.max_uploads = 5;
	ck_assert_int_eq(meta_list_uploads(s, &q, &p), 0);
	ck_assert_uint_eq(p.n, 0);
	meta_list_page_free(&p);
	q.bucket = "upb";
	char longkey[META_KEY_MAX + 2];
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = 0;
	q.key_marker = longkey;
	ck_assert_int_eq(meta_list_uploads(s, &q, &p), -EINVAL);
	meta_list_page_free(&p);

	free(exp);
	for (size_t i = 0; i < n_ups; i++)
		free(ups[i].key);
	free(ups);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("list");
	TCase *tc = tcase_create("list");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_list_model);
	tcase_add_test(tc, test_prefix_skip);
	tcase_add_test(tc, test_uploads_model);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
