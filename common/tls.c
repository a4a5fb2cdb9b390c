/*
 * tls.c — TLS over memory BIOs for the gateway's HTTP server and for RPC
 * between services (model in tls.h). Owns the SSL_CTX (behind a mutex, swapped on reload) and, per
 * connection, an SSL with two memory BIOs: rbio (a BIO_s_mem) holds
 * ciphertext fed from the socket until SSL_read consumes it; wbio is our
 * own sink that appends what OpenSSL writes to one malloc'd buffer, sized
 * up front for a whole tls_conn_write, which tls_conn_take_all hands to
 * the caller as is: the only copies of response bytes are the encryption
 * itself and the kernel's (a BIO_s_mem would add two more, and reallocs).
 *
 * Invariants: memory stays bounded because the caller feeds only when
 * tls_conn_drained() (everything fed was consumed into at most one
 * partial record) and takes all output after each call that can make
 * some. OpenSSL's per-thread error queue is cleared before every call, so
 * one connection's failure never shows up as another's.
 *
 * Does not: touch sockets, timers, HTTP or HTTP/2; decide which CA or
 * which files a service uses (gateway/gw_front.c for the S3 port,
 * common/rpc_tls.c for RPC); check a peer's name (any certificate that
 * chains to the configured CA is accepted).
 *
 * Threads: a tls_conn is used on one thread (the server's loop); the
 * context pointer is read under the mutex by tls_conn_new and replaced by
 * tls_server_reload from any thread; the counters are atomics.
 */
#include "common/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"

#define SESSION_CACHE_SIZE 4096
#define SESSION_TIMEOUT_S 7200
#define TICKET_KEYS_LEN 80 /* name 16 + HMAC 32 + AES 32 (OpenSSL's layout) */
#define TLS_SPARES 2

static const unsigned char alpn_http11[] = "\x08http/1.1";

struct tls_server {
	pthread_mutex_t mu;
	unsigned char alpn[32];         /* wire format: offered (client) or accepted */
	unsigned alpn_len;
	bool alpn_strict;               /* server: no common protocol is fatal */
	bool client;
	SSL_CTX *ctx;                   /* current; SSLs hold their own reference */
	X509_CRL *crl;                  /* the CRL loaded with ctx (cfg.crl_file), or NULL */
	atomic_uint_fast64_t gen;       /* bumped by every reload: connections recheck
					 * their peer against the new CRL */
	atomic_uint_fast64_t handshakes, failures, resumed, tls12, tls13, reloads,
		reload_failures;
};

struct tls_conn {
	struct tls_server *ts;
	SSL *ssl;
	BIO *rbio, *wbio;               /* owned by ssl */
	char *out;                      /* ciphertext to send (wbio's sink) */
	size_t out_off, out_len, out_cap; /* [out_off, out_len) not yet taken */
	char *spare[TLS_SPARES];        /* taken buffers given back, for reuse */
	size_t spare_cap[TLS_SPARES];
	bool started;                   /* bytes were fed */
	bool done;                      /* handshake complete */
	bool failed;                    /* counted as a failure */
	bool want_input;                /* the last read consumed all input */
	bool notified;                  /* close_notify queued */
	uint64_t gen;                   /* ts->gen the peer was last checked against */
	char why[200];                  /* the reason of a failure */
};

/* ------------------------------------------------------------ context */

static void set_err(char *err, size_t cap, const char *what, const char *file)
{
	unsigned long e = ERR_peek_last_error();
	char reason[256] = "unknown error";
	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	if (err && cap)
		snprintf(err, cap, "%s %s: %s", what, file, reason);
	ERR_clear_error();
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	struct tls_server *ts = arg;
	unsigned char *sel;
	unsigned char sel_len;
	if (SSL_select_next_proto(&sel, &sel_len, ts->alpn, ts->alpn_len, in, inlen) !=
	    OPENSSL_NPN_NEGOTIATED)
		/* The S3 port answers nothing and speaks HTTP/1.1; a port with
		 * its own list (RPC: h2) refuses a client that cannot speak it. */
		return ts->alpn_strict ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	*outlen = sel_len;
	return SSL_TLSEXT_ERR_OK;
}

/* A stale CRL (past its nextUpdate) is still the newest list the operator
 * gave: its revocations apply, its age does not fail the handshake
 * (docs/security.md, "Revocation": fail-open, reported by rpc_tls). */
static int verify_crl_stale_ok(int ok, X509_STORE_CTX *x)
{
	if (!ok && X509_STORE_CTX_get_error(x) == X509_V_ERR_CRL_HAS_EXPIRED) {
		X509_STORE_CTX_set_error(x, X509_V_OK);
		return 1;
	}
	return ok;
}

/* The CRL of cfg->crl_file (PEM, signed by the CA) into ctx's store, with
 * CRL checking on for the peer's certificate; a reference in *out. */
static int load_crl(SSL_CTX *ctx, const char *file, X509_CRL **out, char *err, size_t cap)
{
	FILE *f = fopen(file, "r");
	if (!f) {
		snprintf(err, cap, "cannot open the CRL %s: %s", file, strerror(errno));
		return -1;
	}
	X509_CRL *crl = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	if (!crl) {
		set_err(err, cap, "cannot read the CRL", file);
		return -1;
	}
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	if (X509_STORE_add_crl(st, crl) != 1) {
		X509_CRL_free(crl);
		set_err(err, cap, "cannot use the CRL", file);
		return -1;
	}
	/* The leaf only: the CA itself is the root of trust. */
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	*out = crl;
	return 0;
}

static SSL_CTX *make_ctx(struct tls_server *ts, const struct tls_cfg *cfg, X509_CRL **crl,
			 char *err, size_t cap)
{
	const char *cert = cfg->cert_file, *key = cfg->key_file;
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(cfg->client ? TLS_client_method() : TLS_server_method());
	if (!ctx) {
		set_err(err, cap, "cannot create a TLS context for", cert ? cert : "a client");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, cfg->tls13_only ? TLS1_3_VERSION : TLS1_2_VERSION);
	SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
	if (SSL_CTX_get_security_level(ctx) < 2)
		SSL_CTX_set_security_level(ctx, 2);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
					 SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (cfg->client) {
		if (SSL_CTX_set_alpn_protos(ctx, ts->alpn, ts->alpn_len) != 0) {
			set_err(err, cap, "cannot set ALPN for", cert ? cert : "a client");
			goto fail;
		}
	} else {
		SSL_CTX_set_alpn_select_cb(ctx, alpn_select, ts);
		const char *sc = cfg->sid_ctx ? cfg->sid_ctx : "iolake-s3";
		SSL_CTX_set_session_id_context(ctx, (const unsigned char *)sc,
					       (unsigned)strlen(sc));
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
		SSL_CTX_sess_set_cache_size(ctx, SESSION_CACHE_SIZE);
		SSL_CTX_set_timeout(ctx, SESSION_TIMEOUT_S);
		if (cfg->no_tickets)
			SSL_CTX_set_num_tickets(ctx, 0);
	}
	if (cert && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		set_err(err, cap, "cannot load the certificate", cert);
		goto fail;
	}
	if (key && SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		set_err(err, cap, "cannot load the private key", key);
		goto fail;
	}
	if (cert && key && SSL_CTX_check_private_key(ctx) != 1) {
		set_err(err, cap, "the key does not match the certificate:", key);
		goto fail;
	}
	if (cfg->ca_file) {
		if (SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1) {
			set_err(err, cap, "cannot load the CA certificate", cfg->ca_file);
			goto fail;
		}
		int mode = SSL_VERIFY_PEER;
		if (!cfg->client) {
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
			STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca_file);
			if (names)
				SSL_CTX_set_client_CA_list(ctx, names);
		}
		SSL_CTX_set_verify(ctx, mode, cfg->crl_file ? verify_crl_stale_ok : NULL);
		if (cfg->crl_file && load_crl(ctx, cfg->crl_file, crl, err, cap))
			goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int tls_ctx_new(const struct tls_cfg *cfg, struct tls_server **out, char *err, size_t err_len)
{
	struct tls_server *ts = calloc(1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	if (cfg->alpn) {
		if (cfg->alpn_len == 0 || cfg->alpn_len > sizeof(ts->alpn)) {
			free(ts);
			snprintf(err, err_len, "ALPN list of %u bytes", cfg->alpn_len);
			return -EINVAL;
		}
		memcpy(ts->alpn, cfg->alpn, cfg->alpn_len);
		ts->alpn_len = cfg->alpn_len;
		ts->alpn_strict = true;
	} else {
		memcpy(ts->alpn, alpn_http11, sizeof(alpn_http11) - 1);
		ts->alpn_len = sizeof(alpn_http11) - 1;
	}
	ts->client = cfg->client;
	ts->ctx = make_ctx(ts, cfg, &ts->crl, err, err_len);
	if (!ts->ctx) {
		free(ts);
		return -EINVAL;
	}
	pthread_mutex_init(&ts->mu, NULL);
	*out = ts;
	return 0;
}

int tls_server_new(const char *cert_file, const char *key_file, struct tls_server **out,
		   char *err, size_t err_len)
{
	return tls_ctx_new(&(struct tls_cfg){ .cert_file = cert_file, .key_file = key_file },
			   out, err, err_len);
}

int tls_ctx_reload(struct tls_server *ts, const struct tls_cfg *cfg, char *err, size_t err_len)
{
	X509_CRL *crl = NULL;
	SSL_CTX *ctx = make_ctx(ts, cfg, &crl, err, err_len);
	if (!ctx) {
		ts->reload_failures++;
		return -EINVAL;
	}
	pthread_mutex_lock(&ts->mu);
	SSL_CTX *old = ts->ctx;
	/* Tickets issued before the reload stay valid: resumption survives a
	 * certificate rotation. */
	unsigned char keys[TICKET_KEYS_LEN];
	if (!cfg->client && SSL_CTX_get_tlsext_ticket_keys(old, keys, sizeof(keys)) == 1)
		SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof(keys));
	ts->ctx = ctx;
	X509_CRL *old_crl = ts->crl;
	ts->crl = crl;
	atomic_fetch_add(&ts->gen, 1);
	pthread_mutex_unlock(&ts->mu);
	SSL_CTX_free(old);
	X509_CRL_free(old_crl);
	ts->reloads++;
	return 0;
}

int tls_server_reload(struct tls_server *ts, const char *cert_file, const char *key_file,
		      char *err, size_t err_len)
{
	return tls_ctx_reload(ts, &(struct tls_cfg){ .cert_file = cert_file, .key_file = key_file },
			      err, err_len);
}

void tls_server_free(struct tls_server *ts)
{
	if (!ts)
		return;
	SSL_CTX_free(ts->ctx);
	X509_CRL_free(ts->crl);
	pthread_mutex_destroy(&ts->mu);
	free(ts);
}

void tls_server_stats(const struct tls_server *ts, struct tls_stats *o)
{
	o->handshakes = ts->handshakes;
	o->failures = ts->failures;
	o->resumed = ts->resumed;
	o->tls12 = ts->tls12;
	o->tls13 = ts->tls13;
	o->reloads = ts->reloads;
	o->reload_failures = ts->reload_failures;
}

#define TLS_GAUGE(f)                                          \
	static double g_##f(void *arg)                        \
	{                                                     \
		return (double)((struct tls_server *)arg)->f; \
	}
TLS_GAUGE(handshakes)
TLS_GAUGE(failures)
TLS_GAUGE(resumed)
TLS_GAUGE(tls12)
TLS_GAUGE(tls13)
TLS_GAUGE(reloads)
TLS_GAUGE(reload_failures)

int tls_server_register_metrics(struct tls_server *ts, struct metrics_registry *reg)
{
	static const char *const v12[] = { "version", "TLSv1.2", NULL };
	static const char *const v13[] = { "version", "TLSv1.3", NULL };
	static const struct {
		const char *name, *help;
		const char *const *labels;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_gw_tls_handshakes", "TLS handshakes completed", NULL, g_handshakes },
		{ "iolake_gw_tls_handshake_failures", "TLS connections that failed before a "
		  "completed handshake (plain HTTP, bad hello, unknown CA, timeout)", NULL, g_failures },
		{ "iolake_gw_tls_resumed", "TLS handshakes that resumed a session", NULL, g_resumed },
		{ "iolake_gw_tls_version_handshakes", "TLS handshakes by version",
		  v12, g_tls12 },
		{ "iolake_gw_tls_version_handshakes", "TLS handshakes by version",
		  v13, g_tls13 },
		{ "iolake_gw_tls_reloads", "certificate reloads (SIGHUP) that took effect", NULL,
		  g_reloads },
		{ "iolake_gw_tls_reload_failures", "certificate reloads refused (old kept)", NULL,
		  g_reload_failures },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		if (!metrics_gauge_fn_new(reg, g[i].name, g[i].help, g[i].labels, g[i].fn, ts))
			return -errno;
	return 0;
}

void tls_server_serial(struct tls_server *ts, char *buf, size_t cap)
{
	buf[0] = 0;
	pthread_mutex_lock(&ts->mu);
	X509 *x = SSL_CTX_get0_certificate(ts->ctx);
	if (x) {
		BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
		char *hex = bn ? BN_bn2hex(bn) : NULL;
		if (hex)
			snprintf(buf, cap, "%s", hex);
		OPENSSL_free(hex);
		BN_free(bn);
	}
	pthread_mutex_unlock(&ts->mu);
}

/* ------------------------------------------------------------ output sink */

#define RECORD_OVERHEAD 64 /* per 16 KiB record: header, nonce, tag, type, slack */

static int reserve(struct tls_conn *t, size_t more)
{
	if (t->out_cap - t->out_len >= more)
		return 0;
	if (!t->out) /* a buffer given back is already faulted in */
		for (int i = 0; i < TLS_SPARES; i++)
			if (t->spare[i] && t->spare_cap[i] >= more) {
				t->out = t->spare[i];
				t->out_cap = t->spare_cap[i];
				t->spare[i] = NULL;
				return 0;
			}
	if (t->out_off) { /* reclaim what was taken, once */
		memmove(t->out, t->out + t->out_off, t->out_len - t->out_off);
		t->out_len -= t->out_off;
		t->out_off = 0;
		if (t->out_cap - t->out_len >= more)
			return 0;
	}
	size_t cap = t->out_len + more;
	if (cap < 2 * t->out_cap)
		cap = 2 * t->out_cap;
	if (cap < 4096)
		cap = 4096;
	char *p = realloc(t->out, cap);
	if (!p)
		return -ENOMEM;
	t->out = p;
	t->out_cap = cap;
	return 0;
}

static int sink_write(BIO *b, const char *data, int len)
{
	struct tls_conn *t = BIO_get_data(b);
	if (len <= 0)
		return 0;
	if (reserve(t, (size_t)len))
		return -1;
	memcpy(t->out + t->out_len, data, (size_t)len);
	t->out_len += (size_t)len;
	return len;
}

static long sink_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)num;
	(void)ptr;
	struct tls_conn *t = BIO_get_data(b);
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_PENDING:
	case BIO_CTRL_WPENDING:
		return t ? (long)(t->out_len - t->out_off) : 0;
	default:
		return 0;
	}
}

static BIO_METHOD *sink_method;
static pthread_once_t sink_once = PTHREAD_ONCE_INIT;

static void sink_init(void)
{
	sink_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "iolake-tls-out");
	if (sink_method) {
		BIO_meth_set_write(sink_method, sink_write);
		BIO_meth_set_ctrl(sink_method, sink_ctrl);
	}
}

/* ------------------------------------------------------------ connections */

struct tls_conn *tls_conn_new(struct tls_server *ts)
{
	struct tls_conn *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ts = ts;
	pthread_mutex_lock(&ts->mu);
	t->gen = atomic_load(&ts->gen);
	t->ssl = SSL_new(ts->ctx);
	pthread_mutex_unlock(&ts->mu);
	if (!t->ssl)
		goto err_free;
	pthread_once(&sink_once, sink_init);
	t->rbio = BIO_new(BIO_s_mem());
	t->wbio = sink_method ? BIO_new(sink_method) : NULL;
	if (!t->rbio || !t->wbio)
		goto err_bio;
	BIO_set_data(t->wbio, t);
	BIO_set_init(t->wbio, 1);
	/* An empty input BIO means "retry later", not end of stream. */
	BIO_set_mem_eof_return(t->rbio, -1);
	SSL_set_bio(t->ssl, t->rbio, t->wbio);
	if (ts->client)
		SSL_set_connect_state(t->ssl);
	else
		SSL_set_accept_state(t->ssl);
	t->want_input = true;
	return t;
err_bio:
	BIO_free(t->rbio);
	BIO_free(t->wbio);
	SSL_free(t->ssl);
err_free:
	ERR_clear_error();
	free(t);
	return NULL;
}

void tls_conn_free(struct tls_conn *t)
{
	if (!t)
		return;
	if (t->started && !t->done && !t->failed)
		t->ts->failures++; /* gave up or timed out mid-handshake */
	/* A connection that ends without close_notify (idle timeout, the
	 * client just closing) but without error keeps its session
	 * resumable: OpenSSL drops sessions of SSLs freed "unshut". */
	if (t->done && !t->failed)
		SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
	SSL_free(t->ssl);
	free(t->out);
	tls_conn_trim(t);
	free(t);
}

int tls_conn_feed(struct tls_conn *t, const void *data, size_t len)
{
	if (!len)
		return 0;
	t->started = true;
	while (len > 0) {
		int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
		int n = BIO_write(t->rbio, data, chunk);
		if (n <= 0) {
			ERR_clear_error();
			return -ENOMEM;
		}
		data = (const char *)data + n;
		len -= (size_t)n;
	}
	t->want_input = false;
	return 0;
}

static void handshake_finished(struct tls_conn *t)
{
	t->done = true;
	struct tls_server *ts = t->ts;
	ts->handshakes++;
	if (SSL_session_reused(t->ssl))
		ts->resumed++;
	if (SSL_version(t->ssl) == TLS1_3_VERSION)
		ts->tls13++;
	else
		ts->tls12++;
}

static ssize_t fail(struct tls_conn *t)
{
	if (!t->why[0]) {
		unsigned long e = ERR_peek_last_error();
		char reason[160] = "protocol error";
		if (e)
			ERR_error_string_n(e, reason, sizeof(reason));
		long v = SSL_get_verify_result(t->ssl);
		if (v != X509_V_OK)
			snprintf(t->why, sizeof(t->why), "%s (peer certificate: %s)", reason,
				 X509_verify_cert_error_string(v));
		else
			snprintf(t->why, sizeof(t->why), "%s", reason);
	}
	ERR_clear_error();
	if (!t->done && !t->failed)
		t->ts->failures++;
	t->failed = true;
	t->want_input = true; /* nothing more will be consumed */
	return -EPROTO;
}

ssize_t tls_conn_read(struct tls_conn *t, void *buf, size_t cap)
{
	if (t->failed)
		return -EPROTO;
	ERR_clear_error();
	int n = SSL_read(t->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
	if (!t->done && SSL_is_init_finished(t->ssl))
		handshake_finished(t);
	if (n > 0)
		return n;
	switch (SSL_get_error(t->ssl, n)) {
	case SSL_ERROR_WANT_READ:
		/* All input consumed (at most a partial record is held). */
		if (BIO_ctrl_pending(t->rbio) == 0)
			t->want_input = true;
		return 0;
	case SSL_ERROR_WANT_WRITE: /* memory BIOs never refuse */
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		t->want_input = true;
		return TLS_EOF;
	default:
		return fail(t);
	}
}

bool tls_conn_drained(const struct tls_conn *t)
{
	return t->want_input && SSL_pending(t->ssl) == 0;
}

int tls_conn_write(struct tls_conn *t, const void *data, size_t len)
{
	if (!t->done || t->failed)
		return -EPROTO;
	/* Room for all of it at once: no realloc copies while encrypting. */
	if (reserve(t, len + (len / 16384 + 1) * RECORD_OVERHEAD))
		return -ENOMEM;
	while (len > 0) {
		int chunk = len > (1u << 30) ? 1 << 30 : (int)len;
		ERR_clear_error();
		int n = SSL_write(t->ssl, data, chunk);
		if (n <= 0) {
			fail(t);
			return -EPROTO;
		}
		data = (const char *)data + n;
		len -= (size_t)n;
	}
	return 0;
}

size_t tls_conn_pending(const struct tls_conn *t)
{
	return t->out_len - t->out_off;
}

size_t tls_conn_take(struct tls_conn *t, void *buf, size_t cap)
{
	size_t have = t->out_len - t->out_off;
	size_t n = have < cap ? have : cap;
	if (!n)
		return 0;
	memcpy(buf, t->out + t->out_off, n);
	t->out_off += n;
	if (t->out_off == t->out_len)
		t->out_off = t->out_len = 0;
	return n;
}

char *tls_conn_take_all(struct tls_conn *t, size_t *len, size_t *cap)
{
	*len = t->out_len - t->out_off;
	*cap = t->out_cap;
	if (!*len)
		return NULL;
	if (t->out_off)
		memmove(t->out, t->out + t->out_off, *len);
	char *p = t->out;
	t->out = NULL;
	t->out_off = t->out_len = t->out_cap = 0;
	return p;
}

void tls_conn_recycle(struct tls_conn *t, char *buf, size_t cap)
{
	if (!buf)
		return;
	int small = -1;
	for (int i = 0; i < TLS_SPARES; i++) {
		if (!t->spare[i]) {
			t->spare[i] = buf;
			t->spare_cap[i] = cap;
			return;
		}
		if (small < 0 || t->spare_cap[i] < t->spare_cap[small])
			small = i;
	}
	if (t->spare_cap[small] < cap) { /* keep the bigger ones */
		free(t->spare[small]);
		t->spare[small] = buf;
		t->spare_cap[small] = cap;
		return;
	}
	free(buf);
}

void tls_conn_trim(struct tls_conn *t)
{
	for (int i = 0; i < TLS_SPARES; i++) {
		free(t->spare[i]);
		t->spare[i] = NULL;
	}
}

void tls_conn_close_notify(struct tls_conn *t)
{
	if (t->notified || !t->done || t->failed)
		return;
	t->notified = true;
	ERR_clear_error();
	SSL_shutdown(t->ssl); /* queues close_notify; we do not wait for the peer's */
	ERR_clear_error();
}

bool tls_conn_handshake_done(const struct tls_conn *t)
{
	return t->done;
}

bool tls_conn_started(const struct tls_conn *t)
{
	return t->started;
}

const char *tls_conn_version(const struct tls_conn *t)
{
	return t->done ? SSL_get_version(t->ssl) : "";
}

const char *tls_conn_error(const struct tls_conn *t)
{
	return t->why;
}

const unsigned char *tls_conn_alpn(const struct tls_conn *t, unsigned *len)
{
	const unsigned char *p = NULL;
	*len = 0;
	SSL_get0_alpn_selected(t->ssl, &p, len);
	return *len ? p : NULL;
}

void tls_conn_peer_cn(const struct tls_conn *t, char *buf, size_t cap)
{
	buf[0] = 0;
	X509 *x = SSL_get0_peer_certificate(t->ssl);
	if (x && X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf,
					   (int)cap) < 0)
		buf[0] = 0;
}

const void *tls_conn_peer_cert(const struct tls_conn *t)
{
	return t->done ? SSL_get0_peer_certificate(t->ssl) : NULL;
}

bool tls_conn_revoked(struct tls_conn *t)
{
	struct tls_server *ts = t->ts;
	uint64_t gen = atomic_load(&ts->gen);
	if (gen == t->gen)
		return false;   /* checked against this CRL (at the handshake or since) */
	t->gen = gen;
	X509 *x = t->done ? SSL_get0_peer_certificate(t->ssl) : NULL;
	if (!x)
		return false;
	bool revoked = false;
	pthread_mutex_lock(&ts->mu);
	X509_REVOKED *rv = NULL;
	if (ts->crl && X509_CRL_get0_by_cert(ts->crl, &rv, x) == 1)
		revoked = true;
	pthread_mutex_unlock(&ts->mu);
	return revoked;
}

const void *tls_server_cert(struct tls_server *ts)
{
	pthread_mutex_lock(&ts->mu);
	X509 *x = SSL_CTX_get0_certificate(ts->ctx);
	pthread_mutex_unlock(&ts->mu);
	return x;
}
