/*
 * native_limit.c — the native port's per-address limits (native_limit.h):
 * rpc_admit hooks over an http_limit table, their counters.
 *
 * Owns the table, unless it is shared (native_loops.c owns that one).
 * Does not own the server (native_srv.c) or the policy of
 * which calls are refunded (native_srv.c calls native_limit_authenticated
 * once a call's signature verifies).
 */
#include "gateway/native_limit.h"

#include <errno.h>
#include <string.h>

#include "common/loop.h"
#include "common/metrics.h"

static void count(struct metrics_counter *m, uint64_t *n)
{
	(*n)++;
	if (m)
		metrics_counter_inc(m);
}

static void lock(struct native_limit *l)
{
	if (l->mu)
		pthread_mutex_lock(l->mu);
}

static void unlock(struct native_limit *l)
{
	if (l->mu)
		pthread_mutex_unlock(l->mu);
}

static bool on_conn_open(void *ud, const uint8_t addr[16], uint32_t *slot)
{
	struct native_limit *l = ud;
	lock(l);
	bool ok = http_limit_conn_open(l->table, addr, loop_now_ns(), slot);
	unlock(l);
	if (!ok)
		count(l->m_conns, &l->conns_refused);
	return ok;
}

static void on_conn_close(void *ud, uint32_t slot)
{
	struct native_limit *l = ud;
	lock(l);
	http_limit_conn_close(l->table, slot);
	unlock(l);
}

static bool on_call(void *ud, uint32_t slot)
{
	struct native_limit *l = ud;
	lock(l);
	bool ok = http_limit_request(l->table, slot, loop_now_ns());
	unlock(l);
	if (!ok)
		count(l->m_rate, &l->calls_refused);
	return ok;
}

int native_limit_init(struct native_limit *l, const struct http_limit_cfg *cfg,
		      struct http_limit_shared *shared, struct metrics_registry *reg)
{
	memset(l, 0, sizeof(*l));
	if (shared) {
		l->table = shared->l;
		l->mu = &shared->mu;
	} else if (!cfg->max_conns && !cfg->rate) {
		return 0;
	} else if (!(l->table = http_limit_new(cfg, 0))) {
		return -ENOMEM;
	}
	l->admit = (struct rpc_admit){ .ud = l, .conn_open = on_conn_open,
				       .conn_close = on_conn_close, .call = on_call };
	if (reg) {
		static const char name[] = "iolake_gw_native_refused_total";
		static const char help[] = "native-port connections and calls refused before "
					   "authentication";
		l->m_conns = metrics_counter_shared(reg, name, help,
						    METRICS_LABELS("reason", "conns_per_addr"));
		l->m_rate = metrics_counter_shared(reg, name, help,
						   METRICS_LABELS("reason", "rate_per_addr"));
	}
	return 0;
}

const struct rpc_admit *native_limit_admit(const struct native_limit *l)
{
	return l->table ? &l->admit : NULL;
}

void native_limit_authenticated(struct native_limit *l, const struct rpc_req *r)
{
	if (!l->table)
		return;
	lock(l);
	http_limit_refund(l->table, rpc_req_admit_slot(r));
	unlock(l);
}

void native_limit_free(struct native_limit *l)
{
	if (!l->mu)
		http_limit_free(l->table);
	l->table = NULL;
	l->mu = NULL;
}
