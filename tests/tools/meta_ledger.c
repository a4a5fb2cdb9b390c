/*
 * meta_ledger.c — a workload against a meta service that writes down
 * every acknowledged op, and the check of a meta service against that
 * ledger (power-cut and crash tests of meta).
 *
 *   meta-ledger run    --meta ADDR --ledger FILE --seed N [--window 16]
 *                      [--count N] [--size BYTES]
 *   meta-ledger verify --meta ADDR --ledger FILE --seed N
 *
 * run: creates bucket "ledger", then submits object ops through a
 * meta_client until killed: PUTs of new keys, overwrites and deletes of
 * keys it has written, never two ops on one key at once. Before sending
 * an op it appends "S key ver" to the ledger, and once meta acknowledged
 * it "A key ver gen" (ver 0: a delete), with write(2) on an O_APPEND
 * file: the ledger survives this process's death (the test kills the
 * meta member, not the ledger's file system). A run appends to the ledger
 * it is given, with keys numbered after the last key there, so one ledger
 * describes many runs against the same meta. The seed drives the choice
 * of ops. An object's body is inline data of 64..2,048 bytes, a function
 * of (key, ver), so verify needs no copy of it. --count stops after that
 * many acknowledged ops; --size makes every op a PUT of a new key with a
 * body of that size (a fill, as bench/meta_catchup.sh uses).
 *
 * verify: for every key, the last acknowledged op decides what must be
 * there: (key, ver)'s exact record (size, body, etag), or nothing after a
 * delete. An op sent after it and never acknowledged may or may not have
 * been applied: its outcome is allowed too. Any other state (a lost
 * acknowledged write, a resurrected delete, a torn body, a key the ledger
 * never sent) fails. Prints the counts; exit 0 when all hold.
 *
 * Not here: starting, killing or cutting the meta member (the test
 * script does: tests/integration/test_meta_powercut.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "meta/client.h"

#define BUCKET "ledger"
#define KEYS_MAX 4000000u   /* keys over all runs of one ledger (bench/meta_catchup.sh fills 2 M) */
#define BODY_MAX 65536u   /* --size's bound */
#define BODY_RAND_MAX 2048u

static char *f_meta, *f_ledger;
static uint64_t f_seed = 1, f_window = 16, f_wait_ms = 60000;
static uint64_t f_count, f_size;   /* run: stop after; fixed body size, puts only */

static uv_loop_t *loop;
static struct meta_client *mc;
static int ledger_fd = -1;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* The body of (key number k, version v): its length and bytes. */
static size_t body(uint32_t k, uint32_t v, uint8_t *out)
{
	uint64_t s = mix(k * 7919ull + v * 1000003ull + 1);
	size_t len = f_size ? (size_t)f_size : 64 + (size_t)(s % (BODY_RAND_MAX - 64 + 1));
	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			s = mix(s + i);
		out[i] = (uint8_t)(s >> (8 * (i % 8)));
	}
	return len;
}

static void key_name(uint32_t k, char *out, size_t n)
{
	snprintf(out, n, "k/%07u", k);
}

static void etag_of(uint32_t k, uint32_t v, char *out, size_t n)
{
	snprintf(out, n, "%08x%08x", k, v);
}

static void ledger_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ledger_line(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(ledger_fd, line, (size_t)n) != n) {
		perror("meta-ledger: ledger write");
		exit(1);
	}
}

/* ------------------------------------------------------------ run */

struct key_state {
	uint32_t ver;       /* last acknowledged version (0: none or deleted) */
	uint32_t next_ver;  /* versions handed out */
	bool busy;          /* an op is in flight */
	bool acked;         /* ever acknowledged */
};

static struct key_state *keys;
static uint32_t n_keys;       /* keys handed out (numbers below it) */
static uint32_t first_key;    /* this run's first */
static uint64_t rng, inflight, n_acks, n_errs;

struct op_ud {
	uint32_t k, v;
};

static void pump(void);

static void on_op(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct op_ud *u = ud;
	struct key_state *ks = &keys[u->k];
	inflight--;
	ks->busy = false;
	bool ok = !err && (res->status == IOLAKE__META__STATUS__STATUS_OK ||
			   (u->v == 0 && res->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND));
	if (ok) {
		ledger_line("A %u %u %llu\n", u->k, u->v,
			    (unsigned long long)(res->generation));
		ks->ver = u->v;
		ks->acked = true;
		n_acks++;
	} else {
		/* In doubt: the op may still have been applied. The key is
		 * left alone from now on, so verify allows either outcome. */
		ks->busy = true;
		n_errs++;
		if (n_errs % 100 == 1)
			fprintf(stderr, "meta-ledger: op on key %u failed (%d, status %d)\n", u->k,
				err, err ? -1 : (int)res->status);
	}
	free(u);
	pump();
}

static void submit(uint32_t k, uint32_t v)
{
	char key[32];
	key_name(k, key, sizeof(key));
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	Iolake__Meta__DeleteObject del = IOLAKE__META__DELETE_OBJECT__INIT;
	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	static uint8_t data[BODY_MAX];
	char etag[24];
	if (v) {
		rec.bucket = BUCKET;
		rec.key = key;
		rec.inline_data.len = body(k, v, data);
		rec.inline_data.data = data;
		rec.size = rec.inline_data.len;
		etag_of(k, v, etag, sizeof(etag));
		rec.etag = etag;
		rec.owner = "root";
		po.record = &rec;
		op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
		op.put_object = &po;
	} else {
		del.bucket = BUCKET;
		del.key = key;
		op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
		op.delete_object = &del;
	}
	struct op_ud *u = malloc(sizeof(*u));
	if (!u)
		abort();
	u->k = k;
	u->v = v;
	ledger_line("S %u %u\n", k, v);
	if (meta_client_submit(mc, &op, on_op, u)) {
		fprintf(stderr, "meta-ledger: submit refused\n");
		exit(1);
	}
	keys[k].busy = true;
	inflight++;
}

static void pump(void)
{
	if (f_count && n_acks >= f_count) {
		if (!inflight) {
			fprintf(stderr, "meta-ledger: %llu ops acknowledged\n",
				(unsigned long long)n_acks);
			meta_client_close(mc);
			mc = NULL;
		}
		return;
	}
	while (inflight < f_window && (!f_count || n_acks + inflight < f_count)) {
		rng = mix(rng + 1);
		uint32_t k;
		uint32_t pick = (uint32_t)(rng % 10);
		if (f_size || pick < 6 || n_keys - first_key < 32) { /* a new key */
			if (n_keys == KEYS_MAX)
				return;
			k = n_keys++;
		} else {                                  /* an old one, if idle */
			k = first_key + (uint32_t)((rng >> 8) % (n_keys - first_key));
			if (keys[k].busy)
				continue;
		}
		struct key_state *ks = &keys[k];
		uint32_t v = (pick == 9 && ks->acked && ks->ver) ? 0 : ++ks->next_ver;
		submit(k, v);
	}
}

static void on_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)ud, (void)index;
	if (err || (res->status != IOLAKE__META__STATUS__STATUS_OK &&
		    res->status != IOLAKE__META__STATUS__STATUS_EXISTS)) {
		fprintf(stderr, "meta-ledger: create bucket: err %d\n", err);
		exit(1);
	}
	fprintf(stderr, "meta-ledger: running\n");
	pump();
}

/* The first key number after those the ledger holds. */
static uint32_t ledger_next_key(void)
{
	FILE *f = fopen(f_ledger, "r");
	uint32_t next = 0;
	char line[128], t;
	unsigned k;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%c %u", &t, &k) == 2 && k < KEYS_MAX && k + 1 > next)
			next = k + 1;
	if (f)
		fclose(f);
	return next;
}

static int run(void)
{
	keys = calloc(KEYS_MAX, sizeof(*keys));
	if (!keys)
		return 1;
	first_key = n_keys = ledger_next_key();
	rng = mix(f_seed);
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = BUCKET;
	b.owner = "root";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	if (meta_client_submit(mc, &op, on_bucket, NULL))
		return 1;
	uv_run(loop, UV_RUN_DEFAULT);
	return 0;
}

/* ------------------------------------------------------------ verify */

struct want {
	bool sent;
	uint32_t ok_ver;        /* what the last ack left (0: absent) */
	bool doubt;             /* an op after it was never acknowledged */
	uint32_t doubt_ver;     /* its version (0: a delete) */
	uint32_t last_sent;     /* the version of the last S line */
	bool last_acked;
};

static struct want *want;
static uint32_t n_want;
static uint64_t v_ok, v_bad, v_doubt, v_absent;

static int read_ledger(void)
{
	FILE *f = fopen(f_ledger, "r");
	if (!f) {
		perror(f_ledger);
		return -1;
	}
	want = calloc(KEYS_MAX, sizeof(*want));
	if (!want)
		return -1;
	char t;
	unsigned k, v;
	unsigned long long gen;
	char line[128];
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%c %u %u %llu", &t, &k, &v, &gen) < 3 || k >= KEYS_MAX)
			continue;   /* a torn last line of a killed writer */
		struct want *w = &want[k];
		if (k + 1 > n_want)
			n_want = k + 1;
		if (t == 'S') {
			w->sent = true;
			w->last_sent = v;
			w->last_acked = false;
		} else if (t == 'A' && w->sent && w->last_sent == v) {
			w->ok_ver = v;
			w->last_acked = true;
		}
	}
	fclose(f);
	for (uint32_t i = 0; i < n_want; i++) {
		struct want *w = &want[i];
		if (w->sent && !w->last_acked) {
			w->doubt = true;
			w->doubt_ver = w->last_sent;
		}
	}
	return 0;
}

static bool record_is(const Iolake__Meta__ObjectRecord *r, uint32_t k, uint32_t v)
{
	uint8_t data[BODY_MAX];
	char etag[24];
	size_t len = body(k, v, data);
	etag_of(k, v, etag, sizeof(etag));
	return r && r->size == len && r->inline_data.len == len &&
	       memcmp(r->inline_data.data, data, len) == 0 && r->etag && strcmp(r->etag, etag) == 0;
}

/* Key k holds rec (NULL: nothing): as its last acknowledged op left it,
 * or as the op in doubt after it would; else wrong. */
static void check_key(uint32_t k, const Iolake__Meta__ObjectRecord *rec)
{
	struct want *w = &want[k];
	bool as_acked = w->ok_ver ? record_is(rec, k, w->ok_ver) : rec == NULL;
	bool as_doubt = w->doubt && (w->doubt_ver ? record_is(rec, k, w->doubt_ver) : rec == NULL);
	if (as_acked) {
		v_ok++;
		if (!rec)
			v_absent++;
		return;
	}
	if (as_doubt) {
		v_doubt++;
		return;
	}
	v_bad++;
	if (v_bad <= 20)
		fprintf(stderr, "meta-ledger: key %u: want ver %u%s, found %s (size %llu etag %s)\n",
			k, w->ok_ver, w->doubt ? " or the op in doubt" : "",
			rec ? "a record" : "nothing", rec ? (unsigned long long)rec->size : 0ull,
			rec && rec->etag ? rec->etag : "-");
}

/* One walk of the bucket's listing with records: every key listed must
 * be one the ledger sent and hold what it says; every key sent and not
 * listed must be allowed to be absent. */
static char list_token[512];
static bool *seen;

static void list_page(void);

static void list_end(void)
{
	for (uint32_t k = 0; k < n_want; k++)
		if (want[k].sent && !seen[k])
			check_key(k, NULL);
	uv_stop(loop);
}

static void on_list(void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	if (err == IOL_ENOT_FOUND || (!err && r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND)) {
		list_end();   /* no bucket: every key is absent */
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(stderr, "meta-ledger: list: error %d\n", err);
		v_bad++;
		uv_stop(loop);
		return;
	}
	for (size_t i = 0; i < r->n_entries; i++) {
		unsigned k;
		const Iolake__Meta__ListEntry *e = r->entries[i];
		if (sscanf(e->name, "k/%u", &k) != 1 || k >= n_want || !want[k].sent || seen[k]) {
			fprintf(stderr, "meta-ledger: key %s was never sent (or listed twice)\n",
				e->name);
			v_bad++;
			continue;
		}
		seen[k] = true;
		check_key(k, e->record);
	}
	if (r->truncated && r->next_token) {
		snprintf(list_token, sizeof(list_token), "%s", r->next_token);
		list_page();
		return;
	}
	list_end();
}

static void list_page(void)
{
	Iolake__Meta__ListObjectsRequest req = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
	req.bucket = BUCKET;
	req.token = list_token;
	req.max_keys = 1000;
	req.want_records = true;
	if (meta_client_call(mc, META_M_LIST_OBJECTS, &req.base, on_list, NULL))
		exit(1);
}

static int verify(void)
{
	if (read_ledger() || !(seen = calloc(KEYS_MAX, sizeof(*seen))))
		return 1;
	list_page();
	uv_run(loop, UV_RUN_DEFAULT);
	uint64_t sent = 0;
	for (uint32_t k = 0; k < n_want; k++)
		sent += want[k].sent;
	printf("meta-ledger verify: %llu keys sent, %llu as acknowledged (%llu of them absent "
	       "after an acked delete or never acked), %llu as the op in doubt, %llu wrong\n",
	       (unsigned long long)sent, (unsigned long long)v_ok, (unsigned long long)v_absent,
	       (unsigned long long)v_doubt, (unsigned long long)v_bad);
	return v_bad || v_ok + v_doubt != sent ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *meta = NULL, *ledger = NULL;
	const struct flag_spec flags[] = {
		{ .name = "meta", .type = FLAG_STRING, .dst = &meta, .metavar = "HOST:PORT,...",
		  .help = "meta members", .required = true },
		{ .name = "ledger", .type = FLAG_STRING, .dst = &ledger, .help = "the ledger file",
		  .required = true },
		{ .name = "seed", .type = FLAG_UINT64, .dst = &f_seed, .help = "the workload's seed" },
		{ .name = "window", .type = FLAG_UINT64, .dst = &f_window, .min = 1, .max = 1024,
		  .help = "ops in flight (run)" },
		{ .name = "count", .type = FLAG_UINT64, .dst = &f_count,
		  .help = "run: stop after this many acknowledged ops (0: until killed)" },
		{ .name = "size", .type = FLAG_SIZE, .dst = &f_size, .max = BODY_MAX,
		  .help = "run: PUTs of new keys only, each body this size (0: mixed ops, 64 B-2 KiB)" },
		{ .name = "wait", .type = FLAG_DURATION, .dst = &f_wait_ms,
		  .help = "how long verify's calls retry while meta is not answering" },
		{ 0 },
	};
	if (argc < 2 || (strcmp(argv[1], "run") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: meta-ledger run|verify --meta ADDR --ledger FILE --seed N\n");
		return 2;
	}
	bool is_run = strcmp(argv[1], "run") == 0;
	int rc = flags_parse_program("meta-ledger", is_run ? "run" : "verify", flags, argc - 1,
				     argv + 1, NULL);
	if (rc >= 0)
		return rc;
	f_meta = strdup(meta);
	f_ledger = (char *)ledger;
	log_set_level(LOG_LEVEL_WARN);
	loop = uv_default_loop();
	const char *members[META_CLIENT_MAX_MEMBERS];
	size_t n_members = 0;
	for (char *save = NULL, *m = strtok_r(f_meta, ",", &save);
	     m && n_members < META_CLIENT_MAX_MEMBERS; m = strtok_r(NULL, ",", &save))
		members[n_members++] = m;
	struct meta_client_opts o = { .members = members, .n_members = n_members,
				      .retry_for_ms = is_run ? 3000 : (uint32_t)f_wait_ms };
	if (meta_client_new(loop, &o, &mc))
		return 1;
	if (is_run) {
		ledger_fd = open(f_ledger, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (ledger_fd < 0) {
			perror(f_ledger);
			return 1;
		}
		return run();
	}
	return verify();
}
