/*
 * group_cluster.h — the in-process meta cluster of the multi-group tests
 * (test_groups.c, test_range_move.c): NMEMB members (meta/node.h) on their
 * own loop_threads, real libraft over loopback, data under /dev/shm; and
 * synchronous calls through meta/client.h from the test thread (run the
 * test's loop until a call is answered; Submit to a group). Each test
 * fills its members' meta_node_opts and starts them (m_start): what the
 * tests differ in.
 *
 * Header-only (static inline), as raft_cluster.h beside it and
 * meta_test_util.h: it asserts with Check, so it is not in tests/lib,
 * whose sources also link into benches and tools without Check. Ports:
 * pairs (RPC, Raft) in 20000..31999, below the ephemeral range.
 */
#ifndef TESTS_UNIT_META_GROUP_CLUSTER_H
#define TESTS_UNIT_META_GROUP_CLUSTER_H

#include <check.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "common/loop.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta_test_util.h"

#define NMEMB 3

/* ------------------------------------------------------------ members */

struct member {
	struct loop_thread lt;
	struct meta_node *node;
	struct meta_node_opts o;
	char dir[64];
	char addr[32];
	bool running;
	int rc;
	atomic_bool closed;
};

struct cluster {
	struct member m[NMEMB];
	struct meta_peer peers[NMEMB];
};

static inline void m_start_fn(void *arg)
{
	struct member *m = arg;
	m->rc = meta_node_start(&m->lt.loop, &m->o, &m->node);
}

static inline void m_start(struct cluster *c, size_t i)
{
	struct member *m = &c->m[i];
	ck_assert_int_eq(loop_thread_start(&m->lt, "meta-member"), 0);
	atomic_store(&m->closed, false);
	ck_assert_int_eq(loop_thread_call(&m->lt, m_start_fn, m), 0);
	ck_assert_int_eq(m->rc, 0);
	m->running = true;
}

static inline void m_closed(void *ud)
{
	atomic_store(&((struct member *)ud)->closed, true);
}

static inline void m_close_fn(void *arg)
{
	struct member *m = arg;
	meta_node_close(m->node, m_closed, m);
}

static inline void m_stop(struct cluster *c, size_t i)
{
	struct member *m = &c->m[i];
	if (!m->running)
		return;
	ck_assert_int_eq(loop_thread_call(&m->lt, m_close_fn, m), 0);
	for (int k = 0; k < 10000 && !atomic_load(&m->closed); k++)
		usleep(1000);
	ck_assert(atomic_load(&m->closed));
	loop_thread_stop(&m->lt);
	m->node = NULL;
	m->running = false;
}

static inline void cluster_free(struct cluster *c)
{
	for (size_t i = 0; i < NMEMB; i++) {
		m_stop(c, i);
		rm_rf(c->m[i].dir);
	}
}

/* ------------------------------------------------------------ calls */

static inline void on_poke(uv_timer_t *t)
{
	(void)t;
}

static inline void on_poke_closed(uv_handle_t *h)
{
	*(bool *)h->data = true;
}

/* Run loop until *done. A call may complete in the timers phase of a turn
 * (a failure the channel defers to the next turn); UV_RUN_ONCE then still
 * polls, and with nothing but idle connections left it would block
 * forever. A short repeating timer bounds every poll. */
static inline void run_until(uv_loop_t *loop, const bool *done)
{
	uv_timer_t poke;
	bool closed = false;
	uv_timer_init(loop, &poke);
	poke.data = &closed;
	uv_timer_start(&poke, on_poke, 10, 10);
	while (!*done)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&poke, on_poke_closed);
	while (!closed)
		uv_run(loop, UV_RUN_NOWAIT);
}

struct sync_call {
	bool done;
	int err;
	ProtobufCMessage *resp;
};

static inline void on_sync(void *ud, int err, const ProtobufCMessage *resp)
{
	struct sync_call *s = ud;
	s->err = err;
	if (!err) {
		size_t len = protobuf_c_message_get_packed_size(resp);
		uint8_t *b = malloc(len + 1);
		protobuf_c_message_pack(resp, b);
		s->resp = protobuf_c_message_unpack(resp->descriptor, NULL, len, b);
		free(b);
	}
	s->done = true;
}

static inline void on_sync_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	on_sync(ud, err, err ? NULL : &res->base);
}

static inline void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

/* Submit op to group; the result (the caller frees it), err in *err. */
static inline Iolake__Meta__OpResult *submit(uv_loop_t *loop, struct meta_client *cli, uint64_t group,
				      const Iolake__Meta__Op *op, int *err)
{
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_submit_group(cli, group, op, on_sync_submit, &s), 0);
	run_until(loop, &s.done);
	*err = s.err;
	return (Iolake__Meta__OpResult *)s.resp;
}

#endif
