/*
 * rpc_tls.c — mutual TLS for RPC (contract in rpc_tls.h): a node's
 * identity as two common/tls.c contexts (server: TLS 1.3, ALPN h2
 * required, a client certificate from the CA required, no session
 * tickets; client: TLS 1.3, offers h2, verifies the server against the
 * CA), the process default, the counters and the refusal log.
 *
 * Owns: struct rpc_tls (the two contexts and copies of the file names),
 * the process-wide counters and the log limiter. Does not own: sockets,
 * the byte path or HTTP/2 (common/rpc_h2.c drives a tls_conn from here),
 * the codec (common/tls.c), signals (each main calls
 * rpc_tls_reload_default from its SIGHUP handler).
 *
 * Threads: counters are atomics; the default pointer is set once at start
 * before any loop runs; reload swaps contexts inside tls.c under its mutex.
 */
#include "common/rpc_tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "common/loop.h"

static const unsigned char alpn_h2[] = "\x02h2";

struct rpc_tls {
	struct tls_server *srv, *cli;
	char *ca, *cert, *key;
};

static struct rpc_tls *g_default;

static struct {
	atomic_uint_fast64_t server_handshakes, client_handshakes, refused_plaintext,
		refused_handshake, client_failures, reloads, reload_failures;
} g_st;

static void fill_cfg(const struct rpc_tls *t, bool client, struct tls_cfg *c)
{
	*c = (struct tls_cfg){
		.cert_file = t->cert, .key_file = t->key, .ca_file = t->ca, .client = client,
		.tls13_only = true, .alpn = alpn_h2, .alpn_len = sizeof(alpn_h2) - 1,
		.sid_ctx = "iolake-rpc", .no_tickets = true,
	};
}

int rpc_tls_new(const struct rpc_tls_files *f, struct rpc_tls **out, char *err, size_t err_len)
{
	if (!f->ca || !f->cert != !f->key) {
		snprintf(err, err_len, "--rpc-tls-ca, --rpc-tls-cert and --rpc-tls-key go together");
		return -EINVAL;
	}
	struct rpc_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ca = strdup(f->ca);
	t->cert = f->cert ? strdup(f->cert) : NULL;
	t->key = f->key ? strdup(f->key) : NULL;
	int rc = -ENOMEM;
	if (!t->ca || !t->cert != !f->cert || !t->key != !f->key)
		goto fail;
	struct tls_cfg c;
	fill_cfg(t, false, &c);
	if (t->cert && (rc = tls_ctx_new(&c, &t->srv, err, err_len)))
		goto fail;
	fill_cfg(t, true, &c);
	if ((rc = tls_ctx_new(&c, &t->cli, err, err_len)))
		goto fail;
	*out = t;
	return 0;
fail:
	rpc_tls_free(t);
	return rc;
}

int rpc_tls_reload(struct rpc_tls *t, char *err, size_t err_len)
{
	struct tls_cfg c;
	/* Check both before swapping either: a bad file changes nothing. */
	struct tls_server *probe = NULL;
	fill_cfg(t, false, &c);
	int rc = t->srv ? tls_ctx_new(&c, &probe, err, err_len) : 0;
	tls_server_free(probe);
	if (!rc && t->srv) {
		fill_cfg(t, false, &c);
		rc = tls_ctx_reload(t->srv, &c, err, err_len);
	}
	if (!rc) {
		fill_cfg(t, true, &c);
		rc = tls_ctx_reload(t->cli, &c, err, err_len);
	}
	atomic_fetch_add(rc ? &g_st.reload_failures : &g_st.reloads, 1);
	return rc;
}

void rpc_tls_free(struct rpc_tls *t)
{
	if (!t)
		return;
	tls_server_free(t->srv);
	tls_server_free(t->cli);
	free(t->ca);
	free(t->cert);
	free(t->key);
	free(t);
}

void rpc_tls_set_default(struct rpc_tls *t)
{
	g_default = t;
}

struct rpc_tls *rpc_tls_default(void)
{
	return g_default;
}

int rpc_tls_setup(const struct rpc_tls_files *f, char *err, size_t err_len)
{
	if (!f->ca && !f->cert && !f->key)
		return 0;
	if (!f->ca || !f->cert || !f->key) {
		snprintf(err, err_len, "--rpc-tls-ca, --rpc-tls-cert and --rpc-tls-key go together");
		return -EINVAL;
	}
	struct rpc_tls *t;
	int rc = rpc_tls_new(f, &t, err, err_len);
	if (rc)
		return rc;
	char serial[80];
	tls_server_serial(t->cli, serial, sizeof(serial));
	LOG_INFO("rpc-tls: mutual TLS on RPC", "ca=%s cert=%s serial=%s", LOG_Q(f->ca),
		 LOG_Q(f->cert), serial);
	rpc_tls_set_default(t);
	return 0;
}

void rpc_tls_reload_default(void)
{
	struct rpc_tls *t = g_default;
	if (!t)
		return;
	char err[512];
	if (rpc_tls_reload(t, err, sizeof(err))) {
		LOG_ERROR("rpc-tls: reload failed; the old certificate stays", "err=%s", LOG_Q(err));
		return;
	}
	char serial[80];
	tls_server_serial(t->cli, serial, sizeof(serial));
	LOG_INFO("rpc-tls: certificate reloaded", "cert=%s serial=%s", LOG_Q(t->cert), serial);
}

/* ------------------------------------------------------------ connections */

struct tls_conn *rpc_tls_conn_new(struct rpc_tls *t, bool server)
{
	if (server && !t->srv)
		return NULL; /* a client-only identity */
	return tls_conn_new(server ? t->srv : t->cli);
}

int rpc_tls_conn_ready(struct tls_conn *tc, bool server, char *why, size_t cap)
{
	unsigned len;
	const unsigned char *p = tls_conn_alpn(tc, &len);
	if (!p || len != 2 || memcmp(p, "h2", 2) != 0) {
		snprintf(why, cap, "the peer did not agree on ALPN h2");
		return -EPROTO;
	}
	atomic_fetch_add(server ? &g_st.server_handshakes : &g_st.client_handshakes, 1);
	return 0;
}

bool rpc_tls_is_plaintext(uint8_t first_byte)
{
	return first_byte != 22; /* TLS ContentType handshake */
}

/* At most one line a second per kind; the lines left out are counted in
 * the next one. */
struct limiter {
	atomic_uint_fast64_t last_ms, dropped;
};

static bool limit_pass(struct limiter *l, uint64_t *dropped)
{
	uint64_t now = loop_now_ms(), last = atomic_load(&l->last_ms);
	if (last && now - last < 1000) {
		atomic_fetch_add(&l->dropped, 1);
		return false;
	}
	if (!atomic_compare_exchange_strong(&l->last_ms, &last, now ? now : 1)) {
		atomic_fetch_add(&l->dropped, 1);
		return false;
	}
	*dropped = atomic_exchange(&l->dropped, 0);
	return true;
}

static struct limiter lim_plain, lim_hs, lim_client;

void rpc_tls_refused(enum rpc_tls_refusal kind, const char *peer, const char *why)
{
	uint64_t dropped;
	if (kind == RPC_TLS_REFUSED_PLAINTEXT) {
		atomic_fetch_add(&g_st.refused_plaintext, 1);
		if (limit_pass(&lim_plain, &dropped))
			LOG_WARN("rpc-tls: refused a plaintext connection (this port requires "
				 "mutual TLS)", "peer=%s not_logged=%llu", LOG_Q(peer),
				 (unsigned long long)dropped);
		return;
	}
	atomic_fetch_add(&g_st.refused_handshake, 1);
	if (limit_pass(&lim_hs, &dropped))
		LOG_WARN("rpc-tls: refused a connection: TLS handshake failed", "peer=%s why=%s "
			 "not_logged=%llu", LOG_Q(peer), LOG_Q(why), (unsigned long long)dropped);
}

void rpc_tls_client_failed(const char *target, const char *why)
{
	uint64_t dropped;
	atomic_fetch_add(&g_st.client_failures, 1);
	if (limit_pass(&lim_client, &dropped))
		LOG_WARN("rpc-tls: TLS to a server failed", "target=%s why=%s not_logged=%llu",
			 LOG_Q(target), LOG_Q(why), (unsigned long long)dropped);
}

/* ------------------------------------------------------------ counters */

void rpc_tls_stats(struct rpc_tls_stats *o)
{
	o->server_handshakes = atomic_load(&g_st.server_handshakes);
	o->client_handshakes = atomic_load(&g_st.client_handshakes);
	o->refused_plaintext = atomic_load(&g_st.refused_plaintext);
	o->refused_handshake = atomic_load(&g_st.refused_handshake);
	o->client_failures = atomic_load(&g_st.client_failures);
	o->reloads = atomic_load(&g_st.reloads);
	o->reload_failures = atomic_load(&g_st.reload_failures);
}

#define TLS_STAT(f)                                   \
	static double m_##f(void *arg)                \
	{                                             \
		(void)arg;                            \
		return (double)atomic_load(&g_st.f);  \
	}
TLS_STAT(server_handshakes)
TLS_STAT(client_handshakes)
TLS_STAT(refused_plaintext)
TLS_STAT(refused_handshake)
TLS_STAT(client_failures)
TLS_STAT(reloads)
TLS_STAT(reload_failures)

int rpc_tls_register_metrics(struct metrics_registry *reg)
{
	static const char *const srv[] = { "side", "server", NULL };
	static const char *const cli[] = { "side", "client", NULL };
	static const char *const plain[] = { "reason", "plaintext", NULL };
	static const char *const hs[] = { "reason", "handshake", NULL };
	static const struct {
		const char *name, *help;
		const char *const *labels;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_rpc_tls_handshakes", "RPC mutual-TLS handshakes completed", srv,
		  m_server_handshakes },
		{ "iolake_rpc_tls_handshakes", "RPC mutual-TLS handshakes completed", cli,
		  m_client_handshakes },
		{ "iolake_rpc_tls_refused", "RPC connections refused by a mutual-TLS server "
		  "(plaintext peer, or a failed handshake: no or wrong certificate)", plain,
		  m_refused_plaintext },
		{ "iolake_rpc_tls_refused", "RPC connections refused by a mutual-TLS server "
		  "(plaintext peer, or a failed handshake: no or wrong certificate)", hs,
		  m_refused_handshake },
		{ "iolake_rpc_tls_client_failures", "RPC connections whose TLS to the server "
		  "failed (server certificate not from the CA, refused by the server)", NULL,
		  m_client_failures },
		{ "iolake_rpc_tls_reloads", "RPC certificate reloads (SIGHUP) that took effect",
		  NULL, m_reloads },
		{ "iolake_rpc_tls_reload_failures", "RPC certificate reloads refused (old kept)",
		  NULL, m_reload_failures },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (!metrics_gauge_fn_new(reg, g[i].name, g[i].help, g[i].labels, g[i].fn, NULL) &&
		    errno != EEXIST)
			return -errno;
	return 0;
}
