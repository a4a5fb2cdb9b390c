/*
 * rpc_health.c — what the RPC layer knows about the health of each TCP
 * peer: a circuit breaker per peer address, shared by every channel of
 * the process that talks to it, the defaults of failure detection (PING
 * cadence and timeout, TCP keepalive and TCP_USER_TIMEOUT) and the
 * counters behind /metrics.
 *
 * Circuit (per "host:port"):
 *   UP (closed)     calls go out.
 *   DOWN (open)     a connection to the peer failed: refused, timed out,
 *                   lost, or declared dead because a PING went unanswered.
 *                   New calls fail at once with UNAVAILABLE ("fast fail").
 *                   retry_at = now + backoff (doubling per failure from
 *                   backoff_min to backoff_max, jittered to [0.8, 1.2)).
 *   PROBING         (half-open) past retry_at, one channel reconnects and
 *                   sends a PING: its probe timer, or a call on a channel
 *                   without a connection, which rides the probe (the
 *                   trial call). Other calls still fail at once. The
 *                   PING's answer closes the circuit (UP, backoff reset);
 *                   a failure opens it again with the next backoff.
 * Only one channel probes a peer at a time (rpc_peer_probe_begin decides).
 *
 * Threads: channels of one peer may live on different loops (an OSD's
 * recovery driver and its service), so transitions take one global mutex
 * (they are rare: failures and probes); the state a call checks is one
 * relaxed atomic load, no lock.
 *
 * Memory: peers are never freed; at most RPC_PEERS_MAX are tracked, after
 * that new targets get no circuit (calls behave as if it were closed).
 *
 * Does not: open connections or send PINGs (rpc_h2.c does, and reports
 * here), nor track in-process ("local:") targets, which cannot fail this
 * way.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "common/metrics.h"
#include "common/rpc_internal.h"
#include "common/rpc_tls.h"

#define RPC_PEERS_MAX 1024

struct rpc_peer {
	char target[288];              /* "host:port" as channels name it */
	atomic_int state;              /* enum rpc_peer_state */
	atomic_uint_fast64_t retry_at_ms;
	uint32_t backoff_ms;           /* under g_mu; 0 after a success */
	uint32_t rng;                  /* under g_mu: jitter */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rpc_peer *g_peers[RPC_PEERS_MAX];
static unsigned g_npeers;          /* published under g_mu */

static struct {
	atomic_uint_fast64_t pings, ping_acks, ping_rtt_us_sum, ping_rtt_us_max;
	atomic_uint_fast64_t dead, opens, closes, probes, fast_fails;
} g_st;

/* ------------------------------------------------------------ defaults */

static uint32_t env_ms(const char *name, uint32_t def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	return *end || n == 0 || n > 3600000 ? def : (uint32_t)n;
}

void rpc_health_defaults(struct rpc_health_opts *o)
{
	/* getenv is read each time: channels are opened rarely. */
	o->ping_busy_ms = env_ms("IOLAKE_RPC_PING_BUSY_MS", 1000);
	o->ping_idle_ms = env_ms("IOLAKE_RPC_PING_IDLE_MS", 10000);
	o->ping_timeout_ms = env_ms("IOLAKE_RPC_PING_TIMEOUT_MS", 2000);
	o->user_timeout_ms = env_ms("IOLAKE_RPC_USER_TIMEOUT_MS", 5000);
	o->keepalive_idle_s = env_ms("IOLAKE_RPC_KEEPALIVE_IDLE_S", 5);
	o->keepalive_intvl_s = 1;
	o->keepalive_cnt = 3;
}

/* ------------------------------------------------------------ peers */

const char *rpc_peer_state_name(int state)
{
	switch (state) {
	case RPC_PEER_UP: return "up";
	case RPC_PEER_DOWN: return "down";
	case RPC_PEER_PROBING: return "probing";
	}
	return "unknown";
}

static struct rpc_peer *find_locked(const char *target)
{
	for (unsigned i = 0; i < g_npeers; i++)
		if (strcmp(g_peers[i]->target, target) == 0)
			return g_peers[i];
	return NULL;
}

struct rpc_peer *rpc_peer_get(const char *target)
{
	if (strlen(target) >= sizeof(((struct rpc_peer *)0)->target))
		return NULL;
	pthread_mutex_lock(&g_mu);
	struct rpc_peer *p = find_locked(target);
	if (!p && g_npeers < RPC_PEERS_MAX && (p = calloc(1, sizeof(*p)))) {
		snprintf(p->target, sizeof(p->target), "%s", target);
		atomic_init(&p->state, RPC_PEER_UP);
		atomic_init(&p->retry_at_ms, 0);
		p->rng = (uint32_t)loop_now_ns() | 1;
		g_peers[g_npeers++] = p;
	}
	pthread_mutex_unlock(&g_mu);
	return p;
}

int rpc_peer_state(const char *target)
{
	pthread_mutex_lock(&g_mu);
	struct rpc_peer *p = target ? find_locked(target) : NULL;
	int st = p ? atomic_load_explicit(&p->state, memory_order_relaxed) : RPC_PEER_UP;
	pthread_mutex_unlock(&g_mu);
	return st;
}

uint64_t rpc_peer_retry_at_ms(const char *target)
{
	pthread_mutex_lock(&g_mu);
	struct rpc_peer *p = target ? find_locked(target) : NULL;
	uint64_t at = p ? atomic_load(&p->retry_at_ms) : 0;
	pthread_mutex_unlock(&g_mu);
	return at;
}

int rpc_channel_peer_state(const struct rpc_channel *ch)
{
	if (!ch)
		return RPC_PEER_DOWN;
	if (!ch->peer)
		return RPC_PEER_UP;
	return atomic_load_explicit(&ch->peer->state, memory_order_relaxed);
}

int rpc_peer_load(const struct rpc_peer *p)
{
	return atomic_load_explicit(&((struct rpc_peer *)p)->state, memory_order_relaxed);
}

uint64_t rpc_peer_retry_at(const struct rpc_peer *p)
{
	return atomic_load_explicit(&((struct rpc_peer *)p)->retry_at_ms, memory_order_relaxed);
}

void rpc_peer_failed(struct rpc_peer *p, const struct rpc_channel_opts *o, bool declared_dead)
{
	if (declared_dead)
		atomic_fetch_add(&g_st.dead, 1);
	pthread_mutex_lock(&g_mu);
	uint32_t b = p->backoff_ms ? p->backoff_ms * 2 : o->backoff_min_ms;
	if (b > o->backoff_max_ms)
		b = o->backoff_max_ms;
	p->backoff_ms = b;
	/* Jitter in [0.8, 1.2): gateways that lost a peer together do not
	 * probe it in lockstep. xorshift32 is plenty for that. */
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 17;
	p->rng ^= p->rng << 5;
	uint64_t j = (uint64_t)b * (800 + p->rng % 400) / 1000;
	atomic_store(&p->retry_at_ms, loop_now_ms() + j);
	if (atomic_exchange(&p->state, RPC_PEER_DOWN) == RPC_PEER_UP)
		atomic_fetch_add(&g_st.opens, 1);
	pthread_mutex_unlock(&g_mu);
}

bool rpc_peer_probe_begin(struct rpc_peer *p)
{
	bool ok = false;
	pthread_mutex_lock(&g_mu);
	if (atomic_load(&p->state) == RPC_PEER_DOWN &&
	    loop_now_ms() >= atomic_load(&p->retry_at_ms)) {
		atomic_store(&p->state, RPC_PEER_PROBING);
		atomic_fetch_add(&g_st.probes, 1);
		ok = true;
	}
	pthread_mutex_unlock(&g_mu);
	return ok;
}

void rpc_peer_probe_abandon(struct rpc_peer *p)
{
	pthread_mutex_lock(&g_mu);
	if (atomic_load(&p->state) == RPC_PEER_PROBING) {
		atomic_store(&p->state, RPC_PEER_DOWN);
		atomic_store(&p->retry_at_ms, loop_now_ms());
	}
	pthread_mutex_unlock(&g_mu);
}

void rpc_peer_ok(struct rpc_peer *p)
{
	if (atomic_load_explicit(&p->state, memory_order_relaxed) == RPC_PEER_UP && !p->backoff_ms)
		return; /* the common case: one load, no lock */
	pthread_mutex_lock(&g_mu);
	p->backoff_ms = 0;
	if (atomic_exchange(&p->state, RPC_PEER_UP) != RPC_PEER_UP)
		atomic_fetch_add(&g_st.closes, 1);
	pthread_mutex_unlock(&g_mu);
}

/* ------------------------------------------------------------ counters */

void rpc_health_count_ping(void)
{
	atomic_fetch_add_explicit(&g_st.pings, 1, memory_order_relaxed);
}

void rpc_health_count_ack(uint64_t rtt_us)
{
	atomic_fetch_add_explicit(&g_st.ping_acks, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&g_st.ping_rtt_us_sum, rtt_us, memory_order_relaxed);
	uint64_t m = atomic_load_explicit(&g_st.ping_rtt_us_max, memory_order_relaxed);
	while (rtt_us > m && !atomic_compare_exchange_weak(&g_st.ping_rtt_us_max, &m, rtt_us))
		;
}

void rpc_health_count_fast_fail(void)
{
	atomic_fetch_add_explicit(&g_st.fast_fails, 1, memory_order_relaxed);
}

void rpc_health_stats(struct rpc_health_stats *out)
{
	out->pings = atomic_load(&g_st.pings);
	out->ping_acks = atomic_load(&g_st.ping_acks);
	out->ping_rtt_us_sum = atomic_load(&g_st.ping_rtt_us_sum);
	out->ping_rtt_us_max = atomic_load(&g_st.ping_rtt_us_max);
	out->dead_declared = atomic_load(&g_st.dead);
	out->circuit_opens = atomic_load(&g_st.opens);
	out->circuit_closes = atomic_load(&g_st.closes);
	out->probes = atomic_load(&g_st.probes);
	out->fast_fails = atomic_load(&g_st.fast_fails);
	unsigned down = 0;
	pthread_mutex_lock(&g_mu);
	for (unsigned i = 0; i < g_npeers; i++)
		down += atomic_load(&g_peers[i]->state) != RPC_PEER_UP;
	pthread_mutex_unlock(&g_mu);
	out->peers_not_up = down;
}

#define STAT_GAUGE(field, scale)                         \
	static double m_##field(void *arg)               \
	{                                                \
		(void)arg;                               \
		struct rpc_health_stats st;              \
		rpc_health_stats(&st);                   \
		return (double)st.field * (scale);       \
	}
STAT_GAUGE(pings, 1)
STAT_GAUGE(ping_acks, 1)
STAT_GAUGE(ping_rtt_us_sum, 1e-6)
STAT_GAUGE(ping_rtt_us_max, 1e-6)
STAT_GAUGE(dead_declared, 1)
STAT_GAUGE(circuit_opens, 1)
STAT_GAUGE(circuit_closes, 1)
STAT_GAUGE(probes, 1)
STAT_GAUGE(fast_fails, 1)
STAT_GAUGE(peers_not_up, 1)

int rpc_health_register_metrics(struct metrics_registry *reg)
{
	static const struct {
		const char *name, *help;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_rpc_pings", "HTTP/2 PINGs sent on RPC channels", m_pings },
		{ "iolake_rpc_ping_acks", "PING answers received", m_ping_acks },
		{ "iolake_rpc_ping_rtt_seconds_sum", "sum of PING round trips (divide by acks)", m_ping_rtt_us_sum },
		{ "iolake_rpc_ping_rtt_seconds_max", "longest PING round trip seen", m_ping_rtt_us_max },
		{ "iolake_rpc_peer_dead_declared", "connections declared dead: PING unanswered in time", m_dead_declared },
		{ "iolake_rpc_circuit_opens", "peers whose circuit opened (up -> down)", m_circuit_opens },
		{ "iolake_rpc_circuit_closes", "peers whose circuit closed again after a probe", m_circuit_closes },
		{ "iolake_rpc_probes", "reconnect + PING probes of down peers", m_probes },
		{ "iolake_rpc_fast_fails", "calls failed at once: peer circuit open", m_fast_fails },
		{ "iolake_rpc_peers_not_up", "peers whose circuit is open or probing now", m_peers_not_up },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (!metrics_gauge_fn_new(reg, g[i].name, g[i].help, NULL, g[i].fn, NULL) &&
		    errno != EEXIST)
			return -errno;
	return rpc_tls_register_metrics(reg); /* the transport's TLS counters beside */
}
