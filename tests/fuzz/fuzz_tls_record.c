/*
 * fuzz_tls_record.c — libFuzzer target for the TLS input path of the
 * gateway's HTTP server (common/tls.c): arbitrary bytes as the client's
 * side of a connection, fed in pieces, read out as plaintext, the way
 * http.c drives it. OpenSSL itself is fuzzed upstream; this checks our
 * glue: no crash or leak on any input, reads never exceed the buffer,
 * errors are sticky, drained() holds once a read found nothing, and the
 * output (alerts, server flights) can always be taken whole.
 *
 * Input: byte 0 seeds the piece sizes; the rest is the stream. The seed
 * corpus holds real ClientHellos (TLS 1.2 and 1.3 clients) and noise.
 * A server certificate is made once at start (EC P-256, self-signed,
 * written to /dev/shm and removed after loading).
 */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tls.h"

static struct tls_server *ts;

static void make_server(void)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_set_version(x, X509_VERSION_3);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"fuzz", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_sign(x, k, EVP_sha256());
	char cert[64], key[64];
	snprintf(cert, sizeof(cert), "/dev/shm/fuzz-tls-%d.crt", (int)getpid());
	snprintf(key, sizeof(key), "/dev/shm/fuzz-tls-%d.key", (int)getpid());
	FILE *f = fopen(cert, "w");
	PEM_write_X509(f, x);
	fclose(f);
	f = fopen(key, "w");
	PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	char err[256];
	if (tls_server_new(cert, key, &ts, err, sizeof(err))) {
		fprintf(stderr, "fuzz_tls_record: %s\n", err);
		abort();
	}
	unlink(cert);
	unlink(key);
	X509_free(x);
	EVP_PKEY_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ts)
		make_server();
	if (size < 1)
		return 0;
	struct tls_conn *t = tls_conn_new(ts);
	if (!t)
		return 0;
	uint32_t rng = data[0] | 1u;
	const uint8_t *p = data + 1;
	size_t left = size - 1;
	char buf[1000];
	bool failed = false;
	while (left && !failed) {
		rng = rng * 1103515245u + 12345u;
		size_t n = 1 + (rng >> 16) % 300;
		if (n > left)
			n = left;
		if (tls_conn_feed(t, p, n))
			abort();
		p += n;
		left -= n;
		for (;;) {
			ssize_t r = tls_conn_read(t, buf, sizeof(buf));
			if (r > (ssize_t)sizeof(buf))
				abort();
			if (r > 0)
				continue;
			if (r == 0 && !tls_conn_drained(t))
				abort(); /* a read that found nothing leaves it drained */
			if (r < 0 && r != TLS_EOF) {
				if (tls_conn_read(t, buf, sizeof(buf)) != r)
					abort(); /* sticky */
				failed = true;
			}
			break;
		}
		size_t len, cap;
		char *out = tls_conn_take_all(t, &len, &cap);
		if (out && (len == 0 || cap < len))
			abort();
		if (out)
			tls_conn_recycle(t, out, cap);
	}
	if (tls_conn_handshake_done(t) && tls_conn_write(t, "x", 1) == 0 &&
	    tls_conn_pending(t) == 0)
		abort(); /* a write makes output */
	tls_conn_close_notify(t);
	tls_conn_free(t);
	return 0;
}
