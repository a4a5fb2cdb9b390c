/*
 * rpc_tls.c — mutual TLS for RPC (contract in rpc_tls.h): a node's
 * identity as two common/tls.c contexts (server: TLS 1.3, ALPN h2
 * required, a client certificate from the CA required, no session
 * tickets; client: TLS 1.3, offers h2, verifies the server against the
 * CA), the same pair for Raft's port (ALPN iolake-raft), the optional CRL
 * in all four, the peer's roles from its certificate (rpc_authz.h), the
 * process default, the counters and the refusal log.
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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/rpc_authz.h"
#include "common/tls.h"
#include "common/loop.h"

static const unsigned char alpn_h2[] = "\x02h2";
static const unsigned char alpn_raft[] = "\x0biolake-raft";

struct rpc_tls {
	struct tls_server *srv, *cli;     /* RPC: h2 */
	struct tls_server *rsrv, *rcli;   /* Raft's port: iolake-raft */
	char *ca, *cert, *key, *crl;
	bool legacy;                      /* --rpc-tls-legacy-any-role */
	/* The CRL's watch (rpc_tls_crl_poll): the file as last loaded and
	 * its nextUpdate; crl_mu serialises polls from several loops. */
	pthread_mutex_t crl_mu;
	struct timespec crl_mtime;
	off_t crl_size;
	atomic_int_fast64_t crl_next;     /* nextUpdate, Unix seconds; 0: none */
	atomic_uint_fast64_t crl_polled_ms, crl_warned_ms;
};

static struct rpc_tls *g_default;

static struct {
	atomic_uint_fast64_t server_handshakes, client_handshakes, refused_plaintext,
		refused_handshake, client_failures, reloads, reload_failures, refused_role,
		dropped_revoked, server_role_refused;
	atomic_uint_fast64_t raft_server_handshakes, raft_client_handshakes,
		raft_refused[RPC_TLS_RAFT_COUNT], raft_client_failures[RPC_TLS_RAFT_COUNT],
		raft_dropped_revoked;
} g_st;

static void fill_cfg(const struct rpc_tls *t, bool client, bool raft, struct tls_cfg *c)
{
	*c = (struct tls_cfg){
		.cert_file = t->cert, .key_file = t->key, .ca_file = t->ca, .client = client,
		.tls13_only = true, .alpn = raft ? alpn_raft : alpn_h2,
		.alpn_len = raft ? sizeof(alpn_raft) - 1 : sizeof(alpn_h2) - 1,
		.sid_ctx = raft ? "iolake-raft" : "iolake-rpc", .no_tickets = true,
		.crl_file = t->crl,
	};
}

/* The four contexts, in one order for new, reload and free. */
static struct tls_server **ctx_slot(struct rpc_tls *t, int i, bool *client, bool *raft)
{
	*client = i & 1;
	*raft = i >= 2;
	struct tls_server **slots[4] = { &t->srv, &t->cli, &t->rsrv, &t->rcli };
	return slots[i];
}

/* ------------------------------------------------------------ the CRL's watch */

/* The CRL file's nextUpdate (Unix seconds), 0 when it has none or cannot
 * be read (the load that just worked read it: a race with a writer). */
static int64_t crl_file_next_update(const char *file)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0;
	X509_CRL *crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	const ASN1_TIME *next = crl ? X509_CRL_get0_nextUpdate(crl) : NULL;
	struct tm tm;
	int64_t v = next && ASN1_TIME_to_tm(next, &tm) == 1 ? (int64_t)timegm(&tm) : 0;
	X509_CRL_free(crl);
	ERR_clear_error();
	return v;
}

/* Remember the CRL file's mtime and size (so a file that failed to load
 * is not tried again until it changes). */
static void crl_note_file(struct rpc_tls *t)
{
	struct stat st;
	pthread_mutex_lock(&t->crl_mu);
	if (stat(t->crl, &st) == 0) {
		t->crl_mtime = st.st_mtim;
		t->crl_size = st.st_size;
	}
	pthread_mutex_unlock(&t->crl_mu);
}

/* The CRL was (re)loaded: its file and its nextUpdate. */
static void crl_note(struct rpc_tls *t)
{
	if (!t->crl)
		return;
	crl_note_file(t);
	atomic_store(&t->crl_next, crl_file_next_update(t->crl));
	atomic_store(&t->crl_warned_ms, 0);   /* a new file: warn again at once */
}

static bool crl_changed(struct rpc_tls *t)
{
	struct stat st;
	if (stat(t->crl, &st) != 0)
		return false;   /* gone or renamed over right now: keep the loaded one */
	pthread_mutex_lock(&t->crl_mu);
	bool ch = st.st_mtim.tv_sec != t->crl_mtime.tv_sec ||
		  st.st_mtim.tv_nsec != t->crl_mtime.tv_nsec || st.st_size != t->crl_size;
	pthread_mutex_unlock(&t->crl_mu);
	return ch;
}

static int reload_logged(struct rpc_tls *t, const char *why);

int rpc_tls_crl_poll(struct rpc_tls *t, bool force)
{
	if (!t || !t->crl)
		return 0;
	uint64_t now_ms = loop_now_ms(), last = atomic_load(&t->crl_polled_ms);
	if (!force && last && now_ms - last < RPC_TLS_CRL_POLL_MS)
		return rpc_tls_crl_expired(t);
	if (!force && !atomic_compare_exchange_strong(&t->crl_polled_ms, &last, now_ms ? now_ms : 1))
		return rpc_tls_crl_expired(t);   /* another loop polls right now */
	atomic_store(&t->crl_polled_ms, now_ms ? now_ms : 1);
	if (crl_changed(t) && reload_logged(t, "the CRL file changed"))
		crl_note_file(t);   /* logged; tried again when the file changes again */
	int expired = rpc_tls_crl_expired(t);
	uint64_t warned = atomic_load(&t->crl_warned_ms);
	if (expired && (!warned || now_ms - warned >= RPC_TLS_CRL_WARN_MS) &&
	    atomic_compare_exchange_strong(&t->crl_warned_ms, &warned, now_ms ? now_ms : 1)) {
		int64_t next = atomic_load(&t->crl_next);
		LOG_WARN("rpc-tls: the CRL is past its nextUpdate: its revocations still apply and "
			 "handshakes are not failed for its age (fail-open); re-sign it (iolake-admin "
			 "ca crl) and copy it to every node", "crl=%s next_update=%lld expired_s=%lld",
			 LOG_Q(t->crl), (long long)next, (long long)(time(NULL) - next));
	}
	return expired;
}

int rpc_tls_crl_expired(const struct rpc_tls *t)
{
	int64_t next = t && t->crl ? atomic_load(&t->crl_next) : 0;
	return next && time(NULL) > next;
}

int64_t rpc_tls_crl_next_update(const struct rpc_tls *t)
{
	return t && t->crl ? atomic_load(&t->crl_next) : 0;
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
	t->crl = f->crl ? strdup(f->crl) : NULL;
	t->legacy = f->legacy_any_role;
	pthread_mutex_init(&t->crl_mu, NULL);
	int rc = -ENOMEM;
	if (!t->ca || !t->cert != !f->cert || !t->key != !f->key || !t->crl != !f->crl)
		goto fail;
	for (int i = 0; i < 4; i++) {
		bool client, raft;
		struct tls_server **slot = ctx_slot(t, i, &client, &raft);
		if (!client && !t->cert)
			continue;   /* a client-only identity cannot serve */
		struct tls_cfg c;
		fill_cfg(t, client, raft, &c);
		if ((rc = tls_ctx_new(&c, slot, err, err_len)))
			goto fail;
	}
	crl_note(t);
	*out = t;
	return 0;
fail:
	rpc_tls_free(t);
	return rc;
}

int rpc_tls_reload(struct rpc_tls *t, char *err, size_t err_len)
{
	struct tls_cfg c;
	/* Check one before swapping any: a bad file changes nothing (the
	 * four load the same files). */
	struct tls_server *probe = NULL;
	fill_cfg(t, !t->srv, false, &c);
	int rc = tls_ctx_new(&c, &probe, err, err_len);
	tls_server_free(probe);
	for (int i = 0; i < 4 && !rc; i++) {
		bool client, raft;
		struct tls_server **slot = ctx_slot(t, i, &client, &raft);
		if (!*slot)
			continue;
		fill_cfg(t, client, raft, &c);
		rc = tls_ctx_reload(*slot, &c, err, err_len);
	}
	atomic_fetch_add(rc ? &g_st.reload_failures : &g_st.reloads, 1);
	if (!rc)
		crl_note(t);
	return rc;
}

void rpc_tls_free(struct rpc_tls *t)
{
	if (!t)
		return;
	tls_server_free(t->srv);
	tls_server_free(t->cli);
	tls_server_free(t->rsrv);
	tls_server_free(t->rcli);
	pthread_mutex_destroy(&t->crl_mu);
	free(t->crl);
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
	struct rpc_ident me;
	char why[200] = "", roles[64] = "none";
	if (!rpc_tls_cert_peer(tls_server_cert(t->cli), &me, why, sizeof(why)))
		rpc_roles_format(me.roles, roles, sizeof(roles));
	LOG_INFO("rpc-tls: mutual TLS on RPC and Raft", "ca=%s cert=%s serial=%s roles=%s node=%u "
		 "crl=%s legacy_any_role=%d", LOG_Q(f->ca), LOG_Q(f->cert), serial, roles,
		 (unsigned)me.node_id, LOG_Q(f->crl ? f->crl : ""), (int)f->legacy_any_role);
	if (!me.roles && !f->legacy_any_role)
		LOG_WARN("rpc-tls: this node's certificate carries no iolake role (issued before "
			 "roles): peers refuse it unless they run with --rpc-tls-legacy-any-role; "
			 "issue a new one with iolake-admin ca issue --role", "cert=%s",
			 LOG_Q(f->cert));
	rpc_tls_set_default(t);
	rpc_tls_crl_poll(t, true);   /* warns now when the CRL is already stale */
	return 0;
}

/* Reload t and log the outcome. 0, or -EINVAL (the old files stay). */
static int reload_logged(struct rpc_tls *t, const char *why)
{
	char err[512];
	if (rpc_tls_reload(t, err, sizeof(err))) {
		LOG_ERROR("rpc-tls: reload failed; the old certificate stays", "why=%s err=%s",
			  LOG_Q(why), LOG_Q(err));
		return -EINVAL;
	}
	char serial[80];
	tls_server_serial(t->cli, serial, sizeof(serial));
	LOG_INFO("rpc-tls: certificate reloaded", "why=%s cert=%s serial=%s crl=%s "
		 "crl_next_update=%lld", LOG_Q(why), LOG_Q(t->cert), serial,
		 LOG_Q(t->crl ? t->crl : ""), (long long)rpc_tls_crl_next_update(t));
	return 0;
}

void rpc_tls_reload_default(void)
{
	if (g_default)
		reload_logged(g_default, "SIGHUP");
}

/* ------------------------------------------------------------ connections */

struct tls_conn *rpc_tls_conn_new(struct rpc_tls *t, bool server)
{
	if (server && !t->srv)
		return NULL; /* a client-only identity */
	rpc_tls_crl_poll(t, false);   /* a new CRL file is read before this handshake */
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

int rpc_tls_cert_peer(const void *cert, struct rpc_ident *out, char *why, size_t cap)
{
	X509 *x = (X509 *)cert;
	memset(out, 0, sizeof(*out));
	if (!x)
		return 0;
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;
	snprintf(out->serial, sizeof(out->serial), "%s", hex ? hex : "?");
	OPENSSL_free(hex);
	BN_free(bn);
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out->cn,
				      (int)sizeof(out->cn)) < 0)
		out->cn[0] = 0;
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int rc = 0;
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		if (g->type != GEN_URI)
			continue;
		const ASN1_IA5STRING *u = g->d.uniformResourceIdentifier;
		int r = rpc_authz_parse_uri((const char *)ASN1_STRING_get0_data(u),
					    (size_t)ASN1_STRING_length(u), out);
		if (r < 0) {
			snprintf(why, cap, "certificate %s (CN %s) has an invalid iolake: URI "
				 "(a role must be meta, osd, gw or admin; one node id)", out->serial,
				 out->cn);
			rc = -EINVAL;
			break;
		}
	}
	GENERAL_NAMES_free(names);
	return rc;
}

int rpc_tls_conn_peer(const struct rpc_tls *t, struct tls_conn *tc, struct rpc_ident *out,
		      char *why, size_t cap)
{
	if (rpc_tls_cert_peer(tls_conn_peer_cert(tc), out, why, cap))
		return -EACCES;
	if (out->roles)
		return 0;
	if (t->legacy) {
		out->legacy = true;
		out->roles = RPC_ROLE_ANY;
		return 0;
	}
	snprintf(why, cap, "certificate %s (CN %s) carries no iolake role: issued before roles; "
		 "issue a new one (iolake-admin ca issue --role) or run with "
		 "--rpc-tls-legacy-any-role during the upgrade", out->serial, out->cn);
	return -EACCES;
}

/* ------------------------------------------------------------ Raft's port */

struct tls_conn *rpc_tls_raft_conn_new(struct rpc_tls *t, bool server)
{
	if (server && !t->rsrv)
		return NULL;
	rpc_tls_crl_poll(t, false);
	return tls_conn_new(server ? t->rsrv : t->rcli);
}

int rpc_tls_raft_ready(const struct rpc_tls *t, struct tls_conn *tc, char *why, size_t cap)
{
	unsigned len;
	const unsigned char *p = tls_conn_alpn(tc, &len);
	if (!p || len != sizeof(alpn_raft) - 2 || memcmp(p, alpn_raft + 1, len) != 0) {
		snprintf(why, cap, "the peer did not agree on ALPN iolake-raft");
		return -EPROTO;
	}
	struct rpc_ident peer;
	if (rpc_tls_conn_peer(t, tc, &peer, why, cap))
		return -EACCES;
	if (!(peer.roles & RPC_ROLE_META)) {
		char rs[64];
		rpc_roles_format(peer.roles, rs, sizeof(rs));
		snprintf(why, cap, "certificate %s (CN %s) has roles %s: Raft needs meta",
			 peer.serial, peer.cn, rs);
		return -EACCES;
	}
	return 0;
}

static const char *const raft_refusal_names[] = {
#define RPC_TLS_RAFT_NAME(name, text) text,
	RPC_TLS_RAFT_REFUSALS(RPC_TLS_RAFT_NAME)
#undef RPC_TLS_RAFT_NAME
};

void rpc_tls_raft_handshake(bool server)
{
	atomic_fetch_add(server ? &g_st.raft_server_handshakes : &g_st.raft_client_handshakes, 1);
}

void rpc_tls_raft_dropped_revoked(void)
{
	atomic_fetch_add(&g_st.raft_dropped_revoked, 1);
}

void rpc_tls_raft_stats(struct rpc_tls_raft_stats *o)
{
	o->server_handshakes = atomic_load(&g_st.raft_server_handshakes);
	o->client_handshakes = atomic_load(&g_st.raft_client_handshakes);
	for (int i = 0; i < RPC_TLS_RAFT_COUNT; i++) {
		o->refused[i] = atomic_load(&g_st.raft_refused[i]);
		o->client_failures[i] = atomic_load(&g_st.raft_client_failures[i]);
	}
	o->dropped_revoked = atomic_load(&g_st.raft_dropped_revoked);
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

static struct limiter lim_plain, lim_hs, lim_client, lim_role, lim_raft[RPC_TLS_RAFT_COUNT],
	lim_raft_client, lim_srv_role;

void rpc_tls_raft_refused(bool server, enum rpc_tls_raft_refusal kind, const char *peer,
			  const char *why)
{
	uint64_t dropped;
	if ((unsigned)kind >= RPC_TLS_RAFT_COUNT)
		kind = RPC_TLS_RAFT_HANDSHAKE;
	if (server) {
		atomic_fetch_add(&g_st.raft_refused[kind], 1);
		if (limit_pass(&lim_raft[kind], &dropped))
			LOG_WARN("raft-tls: refused a Raft connection (this port requires mutual TLS "
				 "from a meta member)", "peer=%s reason=%s why=%s not_logged=%llu",
				 LOG_Q(peer), raft_refusal_names[kind], LOG_Q(why),
				 (unsigned long long)dropped);
		return;
	}
	atomic_fetch_add(&g_st.raft_client_failures[kind], 1);
	if (limit_pass(&lim_raft_client, &dropped))
		LOG_WARN("raft-tls: TLS to a Raft peer failed", "target=%s reason=%s why=%s "
			 "not_logged=%llu", LOG_Q(peer), raft_refusal_names[kind], LOG_Q(why),
			 (unsigned long long)dropped);
}

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
	if (kind == RPC_TLS_REFUSED_ROLE || kind == RPC_TLS_REFUSED_REVOKED) {
		bool role = kind == RPC_TLS_REFUSED_ROLE;
		atomic_fetch_add(role ? &g_st.refused_role : &g_st.dropped_revoked, 1);
		if (limit_pass(&lim_role, &dropped))
			LOG_WARN(role ? "rpc-tls: refused a connection: certificate role"
				      : "rpc-tls: dropped a connection: its certificate is revoked",
				 "peer=%s why=%s not_logged=%llu", LOG_Q(peer), LOG_Q(why),
				 (unsigned long long)dropped);
		return;
	}
	atomic_fetch_add(&g_st.refused_handshake, 1);
	if (limit_pass(&lim_hs, &dropped))
		LOG_WARN("rpc-tls: refused a connection: TLS handshake failed", "peer=%s why=%s "
			 "not_logged=%llu", LOG_Q(peer), LOG_Q(why), (unsigned long long)dropped);
}

void rpc_tls_server_role_refused(const char *target, const char *why)
{
	uint64_t dropped;
	atomic_fetch_add(&g_st.server_role_refused, 1);
	if (limit_pass(&lim_srv_role, &dropped))
		LOG_WARN("rpc-tls: refused a server: certificate role", "target=%s why=%s "
			 "not_logged=%llu", LOG_Q(target), LOG_Q(why), (unsigned long long)dropped);
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
	o->refused_role = atomic_load(&g_st.refused_role);
	o->dropped_revoked = atomic_load(&g_st.dropped_revoked);
	o->server_role_refused = atomic_load(&g_st.server_role_refused);
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
TLS_STAT(refused_role)
TLS_STAT(dropped_revoked)
TLS_STAT(raft_server_handshakes)
TLS_STAT(raft_client_handshakes)
TLS_STAT(raft_dropped_revoked)
TLS_STAT(server_role_refused)

/* The process default's CRL, polled at each scrape too (a node that opens
 * no connection still notices a new file and reports the age). */
static double m_crl_expired(void *arg)
{
	(void)arg;
	return (double)rpc_tls_crl_poll(g_default, false);
}

static double m_crl_next_update(void *arg)
{
	(void)arg;
	int64_t next = rpc_tls_crl_next_update(g_default);
	return next ? (double)(next - (int64_t)time(NULL)) : 0;
}

static double m_authz_denied(void *arg)
{
	(void)arg;
	return (double)rpc_authz_denied();
}

static double m_raft_refused(void *arg)
{
	return (double)atomic_load(&g_st.raft_refused[(uintptr_t)arg]);
}

static double m_raft_client_failures(void *arg)
{
	return (double)atomic_load(&g_st.raft_client_failures[(uintptr_t)arg]);
}

int rpc_tls_register_metrics(struct metrics_registry *reg)
{
	static const char *const srv[] = { "side", "server", NULL };
	static const char *const cli[] = { "side", "client", NULL };
	static const char *const plain[] = { "reason", "plaintext", NULL };
	static const char *const hs[] = { "reason", "handshake", NULL };
	static const char *const role[] = { "reason", "role", NULL };
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
		{ "iolake_rpc_tls_refused", "RPC connections refused by a mutual-TLS server "
		  "(plaintext peer, or a failed handshake: no or wrong certificate)", role,
		  m_refused_role },
		{ "iolake_rpc_tls_dropped_revoked", "open RPC connections dropped because a reloaded "
		  "CRL revoked the peer", NULL, m_dropped_revoked },
		{ "iolake_rpc_authz_denied", "RPC calls refused by the caller's certificate role "
		  "(common/rpc_authz.c)", NULL, m_authz_denied },
		{ "iolake_rpc_tls_server_role_refused", "RPC connections a client refused: the "
		  "server's certificate lacks the role serving the called service", NULL,
		  m_server_role_refused },
		{ "iolake_rpc_tls_crl_expired", "1 when the CRL (--rpc-tls-crl) is past its "
		  "nextUpdate (still enforced; re-sign it), else 0", NULL, m_crl_expired },
		{ "iolake_rpc_tls_crl_next_update_seconds", "seconds until the CRL's nextUpdate "
		  "(negative: past; 0: no CRL)", NULL, m_crl_next_update },
		{ "iolake_raft_tls_handshakes", "Raft mutual-TLS handshakes completed", srv,
		  m_raft_server_handshakes },
		{ "iolake_raft_tls_handshakes", "Raft mutual-TLS handshakes completed", cli,
		  m_raft_client_handshakes },
		{ "iolake_raft_tls_dropped_revoked", "open Raft connections dropped because a "
		  "reloaded CRL revoked the peer", NULL, m_raft_dropped_revoked },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (!metrics_gauge_fn_new(reg, g[i].name, g[i].help, g[i].labels, g[i].fn, NULL) &&
		    errno != EEXIST)
			return -errno;
	static const char *const labels[RPC_TLS_RAFT_COUNT][3] = {
#define RPC_TLS_RAFT_LABEL(name, text) { "reason", text, NULL },
		RPC_TLS_RAFT_REFUSALS(RPC_TLS_RAFT_LABEL)
#undef RPC_TLS_RAFT_LABEL
	};
	for (uintptr_t k = 0; k < RPC_TLS_RAFT_COUNT; k++) {
		if (!metrics_gauge_fn_new(reg, "iolake_raft_tls_refused", "Raft connections refused "
					  "by this member's mutual-TLS port, by reason", labels[k],
					  m_raft_refused, (void *)k) && errno != EEXIST)
			return -errno;
		if (!metrics_gauge_fn_new(reg, "iolake_raft_tls_client_failures", "Raft connections "
					  "to a peer whose TLS failed, by reason", labels[k],
					  m_raft_client_failures, (void *)k) && errno != EEXIST)
			return -errno;
	}
	return 0;
}
