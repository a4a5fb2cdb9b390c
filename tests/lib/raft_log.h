/*
 * raft_log.h — write and verify a known raft_uv log (entries and one
 * snapshot) in a directory, with whichever libraft the caller links.
 *
 * test_raftcrc (static libraft, meta/raftcrc.c's byteCrc32) and the tool
 * tests/tools/raft_entries.c (the stock shared libraft) both include it:
 * each writes a log the other loads and checks byte for byte, so a
 * checksum that differed in any batch, segment or snapshot file would
 * refuse the load (raft_uv checks every one).
 *
 * Entry i (1-based) of seed s: term 1 + i / 64, RAFT_COMMAND, 8..9,000
 * bytes in steps of 8 (raft_uv writes entry data as it is and needs
 * whole 8-byte words, as meta/state.c's entries are), content from a
 * xorshift generator of (s, i). Appends carry 1..6 entries each (at
 * most 54,000 bytes: under a segment); 64 KiB segments, so the log spans
 * closed segments and open ones. The
 * snapshot: index n / 2, its term, a one-voter configuration and 1..5,000
 * bytes of (s, 0), kept with every entry (trailing n).
 *
 * Header-only (no state, static functions): the tool links nothing of
 * tests/lib. Returns 0 or -1 with a message in err.
 */
#ifndef TESTS_LIB_RAFT_LOG_H
#define TESTS_LIB_RAFT_LOG_H

#include <raft.h>
#include <raft/uv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define RAFT_LOG_SEGMENT_BYTES (64u << 10)

static uint64_t raft_log_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static uint64_t raft_log_state(uint32_t seed, uint64_t i)
{
	uint64_t x = ((uint64_t)seed << 32 | 0x9e3779b9u) ^ (i * 0xbf58476d1ce4e5b9ull);
	return x ? x : 1;
}

/* Entry i's (or, for i == 0, the snapshot's) bytes into a new buffer. */
static void *raft_log_data(uint32_t seed, uint64_t i, size_t *len)
{
	uint64_t x = raft_log_state(seed, i);
	*len = i ? 8 * (1 + (size_t)(raft_log_next(&x) % 1125))
		 : 1 + (size_t)(raft_log_next(&x) % 5000);
	unsigned char *p = malloc(*len);
	if (!p)
		abort();
	for (size_t k = 0; k < *len; k++)
		p[k] = (unsigned char)(raft_log_next(&x) >> 24);
	return p;
}

static raft_term raft_log_term(uint64_t i)
{
	return 1 + i / 64;
}

struct raft_log_ctx {
	uv_loop_t loop;
	struct raft_uv_transport t;
	struct raft_io io;
	bool done;
	int status;
};

static void raft_log_append_cb(struct raft_io_append *req, int status)
{
	struct raft_log_ctx *c = req->data;
	c->status = status;
	c->done = true;
}

static void raft_log_snapshot_cb(struct raft_io_snapshot_put *req, int status)
{
	struct raft_log_ctx *c = req->data;
	c->status = status;
	c->done = true;
}

static void raft_log_close_cb(struct raft_io *io)
{
	struct raft_log_ctx *c = io->data;
	c->done = true;
}

static void raft_log_wait(struct raft_log_ctx *c)
{
	while (!c->done)
		uv_run(&c->loop, UV_RUN_ONCE);
	c->done = false;
}

static int raft_log_open(struct raft_log_ctx *c, const char *dir, char *err, size_t errn)
{
	memset(c, 0, sizeof(*c));
	if (uv_loop_init(&c->loop) != 0) {
		snprintf(err, errn, "uv_loop_init");
		return -1;
	}
	int rc = raft_uv_tcp_init(&c->t, &c->loop);
	if (rc == 0)
		rc = raft_uv_init(&c->io, &c->loop, dir, &c->t);
	if (rc != 0) {
		snprintf(err, errn, "raft_uv init: %s", raft_strerror(rc));
		return -1;
	}
	c->io.data = c;
	raft_uv_set_segment_size(&c->io, RAFT_LOG_SEGMENT_BYTES);
	raft_uv_set_snapshot_compression(&c->io, false);
	rc = c->io.init(&c->io, 1, "127.0.0.1:1");
	if (rc != 0) {
		snprintf(err, errn, "io init: %s (%.120s)", raft_strerror(rc), c->io.errmsg);
		return -1;
	}
	return 0;
}

static void raft_log_close(struct raft_log_ctx *c)
{
	c->io.close(&c->io, raft_log_close_cb);
	raft_log_wait(c);
	raft_uv_close(&c->io);
	raft_uv_tcp_close(&c->t);
	uv_run(&c->loop, UV_RUN_NOWAIT);
	uv_loop_close(&c->loop);
}

static void raft_log_free_loaded(struct raft_snapshot *snap, struct raft_entry *e, size_t n)
{
	void *last = NULL;
	for (size_t i = 0; i < n; i++)
		if (e[i].batch && e[i].batch != last)
			raft_free(last = e[i].batch);
	raft_free(e);
	if (snap) {
		raft_configuration_close(&snap->configuration);
		for (unsigned k = 0; k < snap->n_bufs; k++)
			raft_free(snap->bufs[k].base);
		raft_free(snap->bufs);
		raft_free(snap);
	}
}

/* Write entries 1..n and the snapshot into dir (empty or absent log). */
static int raft_log_write(const char *dir, unsigned n, uint32_t seed, char *err, size_t errn)
{
	struct raft_log_ctx c;
	if (raft_log_open(&c, dir, err, errn))
		return -1;
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap = NULL;
	raft_index start;
	struct raft_entry *loaded = NULL;
	size_t n_loaded = 0;
	int rc = c.io.load(&c.io, &term, &vote, &snap, &start, &loaded, &n_loaded);
	if (rc != 0 || snap || n_loaded) {
		snprintf(err, errn, "load of a fresh dir: %s, %zu entries", raft_strerror(rc),
			 n_loaded);
		raft_log_free_loaded(snap, loaded, n_loaded);
		raft_log_close(&c);
		return -1;
	}
	uint64_t pick = raft_log_state(seed, ~0ull);
	for (unsigned i = 1; i <= n && rc == 0;) {
		struct raft_entry e[6];
		unsigned k = 0, want = 1 + (unsigned)(raft_log_next(&pick) % 6);
		for (; k < want && i <= n; k++, i++) {
			e[k] = (struct raft_entry){ .term = raft_log_term(i), .type = RAFT_COMMAND };
			e[k].buf.base = raft_log_data(seed, i, &e[k].buf.len);
		}
		struct raft_io_append req = { .data = &c };
		rc = c.io.append(&c.io, &req, e, k, raft_log_append_cb);
		if (rc == 0) {
			raft_log_wait(&c);
			rc = c.status;
		}
		for (unsigned j = 0; j < k; j++)
			free(e[j].buf.base);
	}
	if (rc != 0) {
		snprintf(err, errn, "append: %s (%.120s)", raft_strerror(rc), c.io.errmsg);
		raft_log_close(&c);
		return -1;
	}
	struct raft_snapshot s = { .index = n / 2, .term = raft_log_term(n / 2),
				   .configuration_index = 1, .n_bufs = 1 };
	raft_configuration_init(&s.configuration);
	rc = raft_configuration_add(&s.configuration, 1, "127.0.0.1:1", RAFT_VOTER);
	struct raft_buffer b;
	b.base = raft_log_data(seed, 0, &b.len);
	s.bufs = &b;
	struct raft_io_snapshot_put sreq = { .data = &c };
	if (rc == 0)
		rc = c.io.snapshot_put(&c.io, n, &sreq, &s, raft_log_snapshot_cb);
	if (rc == 0) {
		raft_log_wait(&c);
		rc = c.status;
	}
	free(b.base);
	raft_configuration_close(&s.configuration);
	if (rc != 0)
		snprintf(err, errn, "snapshot_put: %s (%.120s)", raft_strerror(rc), c.io.errmsg);
	raft_log_close(&c);
	return rc ? -1 : 0;
}

/* Load dir and check it holds exactly what raft_log_write(n, seed) wrote. */
static int raft_log_verify(const char *dir, unsigned n, uint32_t seed, char *err, size_t errn)
{
	struct raft_log_ctx c;
	if (raft_log_open(&c, dir, err, errn))
		return -1;
	raft_term term;
	raft_id vote;
	struct raft_snapshot *snap = NULL;
	raft_index start = 0;
	struct raft_entry *e = NULL;
	size_t got = 0;
	int rc = c.io.load(&c.io, &term, &vote, &snap, &start, &e, &got);
	int bad = 0;
	if (rc != 0) {
		snprintf(err, errn, "load: %s (%.120s)", raft_strerror(rc), c.io.errmsg);
		bad = 1;
	} else if (start != 1 || got != n) {
		snprintf(err, errn, "load: start %llu, %zu entries, want 1 and %u",
			 (unsigned long long)start, got, n);
		bad = 1;
	} else if (!snap || snap->index != n / 2 || snap->term != raft_log_term(n / 2) ||
		   snap->n_bufs != 1 || snap->configuration.n != 1 ||
		   snap->configuration.servers[0].id != 1) {
		snprintf(err, errn, "snapshot missing or not the one written");
		bad = 1;
	} else {
		size_t len;
		void *want = raft_log_data(seed, 0, &len);
		if (snap->bufs[0].len != len || memcmp(snap->bufs[0].base, want, len)) {
			snprintf(err, errn, "snapshot data differs");
			bad = 1;
		}
		free(want);
	}
	for (size_t i = 0; !bad && i < got; i++) {
		size_t len;
		void *want = raft_log_data(seed, i + 1, &len);
		if (e[i].term != raft_log_term(i + 1) || e[i].type != RAFT_COMMAND ||
		    e[i].buf.len != len || memcmp(e[i].buf.base, want, len)) {
			snprintf(err, errn, "entry %zu differs (term %llu, %zu bytes)", i + 1,
				 (unsigned long long)e[i].term, e[i].buf.len);
			bad = 1;
		}
		free(want);
	}
	if (rc == 0)
		raft_log_free_loaded(snap, e, got);
	raft_log_close(&c);
	return bad ? -1 : 0;
}

#endif
