/*
 * test_tls.c — common/tls.c as a codec: a tls_conn (server) against an
 * OpenSSL client in the same process, both over memory BIOs, bytes moved
 * by the test. Certificates are made here (a CA and server certs with
 * chosen serials, written under /dev/shm).
 *
 * Covers: handshake and data both ways (TLS 1.3 and 1.2), ALPN
 * "http/1.1", ciphertext fed one byte at a time and output taken in small
 * pieces, 1 MiB through with a small plaintext buffer (drained() only
 * once everything was consumed), close_notify both ways, garbage instead
 * of a ClientHello, a TLS 1.1-only client refused, session resumption,
 * and reload (new connections see the new serial, old ones keep working;
 * a broken file keeps the old certificate).
 *
 * Oracles: the bytes received equal the bytes sent; the serial the
 * client sees; the server's counters.
 */
#include <check.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tls.h"
#include "tests/lib/scratch.h"

static char dir[64];
static char ca_pem[128], cert1[128], key1[128], cert2[128], key2[128], junk[128];

/* ------------------------------------------------------------ certificates */

static EVP_PKEY *new_key(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	ck_assert_ptr_nonnull(k);
	return k;
}

static X509 *new_cert(EVP_PKEY *key, long serial, const char *cn, X509 *issuer,
		      EVP_PKEY *issuer_key, bool ca)
{
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints,
						ca ? "critical,CA:TRUE" : "CA:FALSE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	if (!ca) {
		e = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name,
					"IP:127.0.0.1,DNS:localhost");
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	ck_assert_int_gt(X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()), 0);
	return x;
}

static void write_pem(const char *path, X509 *x, EVP_PKEY *k)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	if (x)
		PEM_write_X509(f, x);
	if (k)
		PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
}

static X509 *ca_x;

static void make_certs(void)
{
	ck_assert_int_lt(test_scratch_path(dir, sizeof(dir), "iolake-tls.XXXXXX"), (int)sizeof(dir));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ca_pem, sizeof(ca_pem), "%s/ca.pem", dir);
	snprintf(cert1, sizeof(cert1), "%s/c1.pem", dir);
	snprintf(key1, sizeof(key1), "%s/k1.pem", dir);
	snprintf(cert2, sizeof(cert2), "%s/c2.pem", dir);
	snprintf(key2, sizeof(key2), "%s/k2.pem", dir);
	snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
	EVP_PKEY *cak = new_key();
	ca_x = new_cert(cak, 1, "test-ca", NULL, NULL, true);
	write_pem(ca_pem, ca_x, NULL);
	EVP_PKEY *k1 = new_key(), *k2 = new_key();
	X509 *c1 = new_cert(k1, 0x1001, "localhost", ca_x, cak, false);
	X509 *c2 = new_cert(k2, 0x2002, "localhost", ca_x, cak, false);
	write_pem(cert1, c1, NULL);
	write_pem(key1, NULL, k1);
	write_pem(cert2, c2, NULL);
	write_pem(key2, NULL, k2);
	FILE *f = fopen(junk, "w");
	fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	X509_free(c1);
	X509_free(c2);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
	EVP_PKEY_free(cak);
}

static void rm_certs(void)
{
	const char *files[] = { ca_pem, cert1, key1, cert2, key2, junk };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(files[i]);
	rmdir(dir);
	X509_free(ca_x);
}

/* ------------------------------------------------------------ client */

struct client {
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio;
};

static void client_init(struct client *cl, int min_v, int max_v, SSL_SESSION *sess)
{
	cl->ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_min_proto_version(cl->ctx, min_v);
	SSL_CTX_set_max_proto_version(cl->ctx, max_v);
	if (min_v < TLS1_2_VERSION)
		SSL_CTX_set_security_level(cl->ctx, 0);
	ck_assert_int_eq(SSL_CTX_load_verify_locations(cl->ctx, ca_pem, NULL), 1);
	SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_PEER, NULL);
	static const unsigned char alpn[] = "\x02h2\x08http/1.1";
	SSL_CTX_set_alpn_protos(cl->ctx, alpn, sizeof(alpn) - 1);
	cl->ssl = SSL_new(cl->ctx);
	cl->rbio = BIO_new(BIO_s_mem());
	cl->wbio = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(cl->rbio, -1);
	SSL_set_bio(cl->ssl, cl->rbio, cl->wbio);
	SSL_set_tlsext_host_name(cl->ssl, "localhost");
	SSL_set1_host(cl->ssl, "localhost");
	if (sess)
		SSL_set_session(cl->ssl, sess);
	SSL_set_connect_state(cl->ssl);
}

static void client_free(struct client *cl)
{
	SSL_free(cl->ssl);
	SSL_CTX_free(cl->ctx);
}

/* Client output -> server, in pieces of at most piece bytes. */
static void c2s(struct client *cl, struct tls_conn *t, size_t piece)
{
	char buf[4096];
	int n;
	while ((n = BIO_read(cl->wbio, buf, (int)(piece < sizeof(buf) ? piece : sizeof(buf)))) > 0)
		ck_assert_int_eq(tls_conn_feed(t, buf, (size_t)n), 0);
}

/* Server output -> client, taken in pieces of at most piece bytes. */
static size_t s2c(struct tls_conn *t, struct client *cl, size_t piece)
{
	char buf[4096];
	size_t n, total = 0;
	while ((n = tls_conn_take(t, buf, piece < sizeof(buf) ? piece : sizeof(buf))) > 0) {
		ck_assert_int_eq(BIO_write(cl->rbio, buf, (int)n), (int)n);
		total += n;
	}
	return total;
}

/* Drive both sides until the handshake is done (or one fails). Returns
 * the server's last tls_conn_read result. */
static ssize_t handshake(struct client *cl, struct tls_conn *t, size_t piece)
{
	char buf[256];
	ssize_t r = 0;
	for (int round = 0; round < 50; round++) {
		int c = SSL_do_handshake(cl->ssl);
		int cerr = c == 1 ? 0 : SSL_get_error(cl->ssl, c); /* before BIO calls reset it */
		c2s(cl, t, piece);
		r = tls_conn_read(t, buf, sizeof(buf));
		size_t moved = s2c(t, cl, piece);
		if (getenv("TLS_TEST_DEBUG"))
			fprintf(stderr, "round %d: client %d server %zd moved %zu\n", round, c, r, moved);
		if (r < 0)
			return r;
		if (c == 1 && tls_conn_handshake_done(t))
			return r;
		if (c != 1 && cerr != SSL_ERROR_WANT_READ) {
			if (getenv("TLS_TEST_DEBUG")) {
				fprintf(stderr, "client: rc %d error %d verify %ld\n", c, cerr,
					SSL_get_verify_result(cl->ssl));
				ERR_print_errors_fp(stderr);
			}
			ERR_clear_error();
			return -1;
		}
	}
	return -2;
}

/* Read all plaintext the server has for us into out (cap). */
static size_t server_read_all(struct tls_conn *t, char *out, size_t cap, size_t chunk)
{
	size_t got = 0;
	for (;;) {
		size_t room = cap - got < chunk ? cap - got : chunk;
		if (!room)
			break;
		ssize_t n = tls_conn_read(t, out + got, room);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static long peer_serial(struct client *cl)
{
	X509 *x = SSL_get1_peer_certificate(cl->ssl);
	ck_assert_ptr_nonnull(x);
	long s = ASN1_INTEGER_get(X509_get0_serialNumber(x));
	X509_free(x);
	return s;
}

static struct tls_server *ts;

static void setup(void)
{
	make_certs();
	char err[256];
	ck_assert_int_eq(tls_server_new(cert1, key1, &ts, err, sizeof(err)), 0);
}

static void teardown(void)
{
	tls_server_free(ts);
	rm_certs();
}

/* ------------------------------------------------------------ tests */

static void roundtrip(int version)
{
	struct client cl;
	client_init(&cl, version, version, NULL);
	struct tls_conn *t = tls_conn_new(ts);
	ck_assert_ptr_nonnull(t);
	ck_assert(!tls_conn_started(t));
	ck_assert_int_eq(handshake(&cl, t, 4096), 0);
	ck_assert(tls_conn_handshake_done(t));
	ck_assert_str_eq(tls_conn_version(t), version == TLS1_3_VERSION ? "TLSv1.3" : "TLSv1.2");
	const unsigned char *alpn;
	unsigned alpn_len;
	SSL_get0_alpn_selected(cl.ssl, &alpn, &alpn_len);
	ck_assert_uint_eq(alpn_len, 8);
	ck_assert(!memcmp(alpn, "http/1.1", 8));
	ck_assert_int_eq(peer_serial(&cl), 0x1001);

	/* Request in, response out. */
	const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	ck_assert_int_eq(SSL_write(cl.ssl, req, sizeof(req) - 1), (int)sizeof(req) - 1);
	c2s(&cl, t, 4096);
	char buf[256];
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), (ssize_t)sizeof(req) - 1);
	ck_assert(!memcmp(buf, req, sizeof(req) - 1));
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), 0);
	ck_assert(tls_conn_drained(t));
	const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	ck_assert_int_eq(tls_conn_write(t, resp, sizeof(resp) - 1), 0);
	ck_assert_uint_gt(tls_conn_pending(t), sizeof(resp) - 1);
	s2c(t, &cl, 4096);
	ck_assert_int_eq(SSL_read(cl.ssl, buf, sizeof(buf)), (int)sizeof(resp) - 1);
	ck_assert(!memcmp(buf, resp, sizeof(resp) - 1));

	/* close_notify from the client: TLS_EOF. */
	SSL_shutdown(cl.ssl);
	c2s(&cl, t, 4096);
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), TLS_EOF);
	tls_conn_free(t);
	client_free(&cl);
	struct tls_stats st;
	tls_server_stats(ts, &st);
	ck_assert_uint_eq(st.handshakes, 1);
	ck_assert_uint_eq(st.failures, 0);
	ck_assert_uint_eq(version == TLS1_3_VERSION ? st.tls13 : st.tls12, 1);
}

START_TEST(test_roundtrip_13)
{
	roundtrip(TLS1_3_VERSION);
}
END_TEST

START_TEST(test_roundtrip_12)
{
	roundtrip(TLS1_2_VERSION);
}
END_TEST

/* One byte at a time in, 7 bytes at a time out; 1 MiB each way through
 * a 1000-byte plaintext buffer. */
START_TEST(test_partial_and_large)
{
	struct client cl;
	client_init(&cl, TLS1_2_VERSION, TLS1_3_VERSION, NULL);
	struct tls_conn *t = tls_conn_new(ts);
	ck_assert_int_eq(handshake(&cl, t, 1), 0);
	ck_assert(tls_conn_handshake_done(t));

	size_t big = 1u << 20;
	char *src = malloc(big), *dst = malloc(big);
	for (size_t i = 0; i < big; i++)
		src[i] = (char)(i * 7 + (i >> 11));
	/* client -> server */
	ck_assert_int_eq(SSL_write(cl.ssl, src, (int)big), (int)big);
	size_t got = 0;
	char piece[997];
	int n;
	while ((n = BIO_read(cl.wbio, piece, sizeof(piece))) > 0) {
		ck_assert_int_eq(tls_conn_feed(t, piece, (size_t)n), 0);
		ck_assert(!tls_conn_drained(t));
		got += server_read_all(t, dst + got, big - got, 1000);
	}
	ck_assert_uint_eq(got, big);
	/* Everything was consumed, but only a read that finds nothing says so. */
	ck_assert_int_eq(tls_conn_read(t, dst, 10), 0);
	ck_assert(tls_conn_drained(t));
	ck_assert(!memcmp(src, dst, big));

	/* server -> client, in 7-byte takes */
	ck_assert_int_eq(tls_conn_write(t, src, big), 0);
	s2c(t, &cl, 7);
	ck_assert_uint_eq(tls_conn_pending(t), 0);
	got = 0;
	while (got < big && (n = SSL_read(cl.ssl, dst + got, (int)(big - got))) > 0)
		got += (size_t)n;
	ck_assert_uint_eq(got, big);
	ck_assert(!memcmp(src, dst, big));

	/* Output handed over whole and given back is reused, not reallocated. */
	ck_assert_int_eq(tls_conn_write(t, src, 100000), 0);
	size_t len, cap;
	char *ct = tls_conn_take_all(t, &len, &cap);
	ck_assert_ptr_nonnull(ct);
	ck_assert_uint_gt(len, 100000);
	ck_assert_uint_ge(cap, len);
	ck_assert_int_eq(BIO_write(cl.rbio, ct, (int)len), (int)len);
	tls_conn_recycle(t, ct, cap);
	ck_assert_int_eq(tls_conn_write(t, src, 50000), 0);
	char *again = tls_conn_take_all(t, &len, &cap);
	ck_assert_ptr_eq(again, ct);
	ck_assert_int_eq(BIO_write(cl.rbio, again, (int)len), (int)len);
	tls_conn_recycle(t, again, cap);
	tls_conn_trim(t);
	ck_assert_ptr_null(tls_conn_take_all(t, &len, &cap));
	got = 0;
	while (got < 150000 && (n = SSL_read(cl.ssl, dst + got, (int)(150000 - got))) > 0)
		got += (size_t)n;
	ck_assert_uint_eq(got, 150000);
	ck_assert(!memcmp(dst, src, 100000));
	ck_assert(!memcmp(dst + 100000, src, 50000));

	/* close_notify from the server reaches the client; only once. */
	tls_conn_close_notify(t);
	size_t first = s2c(t, &cl, 4096);
	ck_assert_uint_gt(first, 0);
	tls_conn_close_notify(t);
	ck_assert_uint_eq(tls_conn_pending(t), 0);
	ck_assert_int_le(SSL_read(cl.ssl, dst, 10), 0);
	ck_assert_int_eq(SSL_get_error(cl.ssl, 0), SSL_ERROR_ZERO_RETURN);
	free(src);
	free(dst);
	tls_conn_free(t);
	client_free(&cl);
}
END_TEST

START_TEST(test_garbage_hello)
{
	struct tls_conn *t = tls_conn_new(ts);
	const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	ck_assert_int_eq(tls_conn_feed(t, req, sizeof(req) - 1), 0);
	ck_assert(tls_conn_started(t));
	char buf[64];
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), -EPROTO);
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), -EPROTO); /* sticky */
	ck_assert_int_eq(tls_conn_write(t, "x", 1), -EPROTO);
	ck_assert(tls_conn_drained(t));
	tls_conn_free(t);
	/* A record header that claims a handshake, then noise. */
	t = tls_conn_new(ts);
	const unsigned char noise[] = { 0x16, 0x03, 0x01, 0x00, 0x10, 1,  2,  3,  4,  5, 6,
					7,    8,    9,    10,   11,   12, 13, 14, 15, 16 };
	ck_assert_int_eq(tls_conn_feed(t, noise, sizeof(noise)), 0);
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), -EPROTO);
	tls_conn_free(t);
	/* Half a hello, then the connection goes away: counted too. */
	t = tls_conn_new(ts);
	ck_assert_int_eq(tls_conn_feed(t, noise, 3), 0);
	ck_assert_int_eq(tls_conn_read(t, buf, sizeof(buf)), 0);
	ck_assert(tls_conn_drained(t));
	tls_conn_free(t);
	/* Made and freed without a byte: not a failure. */
	tls_conn_free(tls_conn_new(ts));
	struct tls_stats st;
	tls_server_stats(ts, &st);
	ck_assert_uint_eq(st.failures, 3);
	ck_assert_uint_eq(st.handshakes, 0);
}
END_TEST

START_TEST(test_old_version_refused)
{
	struct client cl;
	client_init(&cl, TLS1_VERSION, TLS1_1_VERSION, NULL);
	struct tls_conn *t = tls_conn_new(ts);
	ck_assert_int_lt(handshake(&cl, t, 4096), 0);
	ck_assert(!tls_conn_handshake_done(t));
	tls_conn_free(t);
	client_free(&cl);
	struct tls_stats st;
	tls_server_stats(ts, &st);
	ck_assert_uint_eq(st.failures, 1);
}
END_TEST

START_TEST(test_resumption)
{
	SSL_SESSION *sess = NULL;
	for (int i = 0; i < 2; i++) {
		struct client cl;
		client_init(&cl, TLS1_2_VERSION, TLS1_2_VERSION, sess);
		struct tls_conn *t = tls_conn_new(ts);
		ck_assert_int_eq(handshake(&cl, t, 4096), 0);
		ck_assert_int_eq(SSL_session_reused(cl.ssl), i == 1);
		if (!sess)
			sess = SSL_get1_session(cl.ssl);
		SSL_shutdown(cl.ssl); /* else OpenSSL marks the session not resumable */
		tls_conn_free(t);
		client_free(&cl);
	}
	SSL_SESSION_free(sess);
	struct tls_stats st;
	tls_server_stats(ts, &st);
	ck_assert_uint_eq(st.handshakes, 2);
	ck_assert_uint_eq(st.resumed, 1);
}
END_TEST

START_TEST(test_reload)
{
	struct client old;
	client_init(&old, TLS1_2_VERSION, TLS1_3_VERSION, NULL);
	struct tls_conn *told = tls_conn_new(ts);
	ck_assert_int_eq(handshake(&old, told, 4096), 0);
	ck_assert_int_eq(peer_serial(&old), 0x1001);
	char serial[64];
	tls_server_serial(ts, serial, sizeof(serial));
	ck_assert_str_eq(serial, "1001");

	char err[256] = "";
	ck_assert_int_eq(tls_server_reload(ts, cert2, key2, err, sizeof(err)), 0);
	tls_server_serial(ts, serial, sizeof(serial));
	ck_assert_str_eq(serial, "2002");
	/* A key that does not match, and a broken file: refused, old stays. */
	ck_assert_int_eq(tls_server_reload(ts, cert2, key1, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, key1));
	ck_assert_int_eq(tls_server_reload(ts, junk, key2, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, junk));
	ck_assert_int_eq(tls_server_reload(ts, "/nonexistent", key2, err, sizeof(err)), -EINVAL);

	struct client cl;
	client_init(&cl, TLS1_2_VERSION, TLS1_3_VERSION, NULL);
	struct tls_conn *t = tls_conn_new(ts);
	ck_assert_int_eq(handshake(&cl, t, 4096), 0);
	ck_assert_int_eq(peer_serial(&cl), 0x2002);

	/* The old connection still works both ways. */
	char buf[64];
	ck_assert_int_eq(SSL_write(old.ssl, "ping", 4), 4);
	c2s(&old, told, 4096);
	ck_assert_int_eq(tls_conn_read(told, buf, sizeof(buf)), 4);
	ck_assert_int_eq(tls_conn_write(told, "pong", 4), 0);
	s2c(told, &old, 4096);
	ck_assert_int_eq(SSL_read(old.ssl, buf, sizeof(buf)), 4);
	ck_assert(!memcmp(buf, "pong", 4));

	tls_conn_free(t);
	tls_conn_free(told);
	client_free(&cl);
	client_free(&old);
	struct tls_stats st;
	tls_server_stats(ts, &st);
	ck_assert_uint_eq(st.reloads, 1);
	ck_assert_uint_eq(st.reload_failures, 3);
}
END_TEST

START_TEST(test_bad_files_at_start)
{
	struct tls_server *x = NULL;
	char err[256] = "";
	ck_assert_int_eq(tls_server_new(junk, key1, &x, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(x);
	ck_assert_ptr_nonnull(strstr(err, "certificate"));
	ck_assert_int_eq(tls_server_new(cert1, key2, &x, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, key2));
	ck_assert_int_eq(tls_server_new(cert1, "/nonexistent", &x, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "private key"));
	/* The errors left nothing behind in OpenSSL's queue. */
	ck_assert_uint_eq(ERR_peek_error(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tls");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_roundtrip_13);
	tcase_add_test(tc, test_roundtrip_12);
	tcase_add_test(tc, test_partial_and_large);
	tcase_add_test(tc, test_garbage_hello);
	tcase_add_test(tc, test_old_version_refused);
	tcase_add_test(tc, test_resumption);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_bad_files_at_start);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
