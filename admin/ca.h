/*
 * ca.h — the cluster CA for mutual TLS between services (iolake-admin ca):
 *
 *   ca init  --dir D [--days N]
 *       D/ca.key (EC P-256, mode 0600) and D/ca.pem (self-signed, CA:TRUE,
 *       keyCertSign; 3650 days by default). Refuses when D/ca.key exists.
 *   ca issue --dir D --name N [--ip A]... [--dns H]... [--days N] --out PREFIX
 *       PREFIX.key (EC P-256, 0600) and PREFIX.pem: subject CN=N, signed by
 *       D's CA, SANs from --ip/--dns, serverAuth + clientAuth, 825 days by
 *       default. Both files are written beside and renamed into place, so
 *       a service reloading on SIGHUP never reads half a file.
 *
 * OpenSSL 3's EVP and X509 APIs; no state beyond the two CA files (serial
 * numbers are 128 random bits). Does not talk to the cluster.
 */
#ifndef ADMIN_CA_H
#define ADMIN_CA_H

#include <stddef.h>
#include <stdio.h>

/* `iolake-admin ca ...` with args after "ca": exit status (0, 1 when it
 * failed, 2 on bad usage), a line on err saying why. */
int admin_ca(int nargs, char **args, FILE *out, FILE *err);

struct ca_issue_req {
	const char *name;          /* subject CN */
	const char *const *ips;    /* IPv4 / IPv6 SANs */
	size_t n_ips;
	const char *const *dns;    /* DNS SANs */
	size_t n_dns;
	unsigned days;             /* validity */
};

/* Make a CA in dir (created 0700 if missing). 0, or -errno with why. */
int ca_init(const char *dir, unsigned days, char *why, size_t cap);

/* Issue a certificate from dir's CA to prefix.pem / prefix.key. */
int ca_issue(const char *dir, const struct ca_issue_req *r, const char *prefix, char *why,
	     size_t cap);

/* Check what a certificate request names before any key is made: the
 * name (1-64 printable ASCII bytes, no '/' or control), each IP (inet_pton
 * v4 or v6), each DNS name (letters, digits, '-', '.', a leading "*."; at
 * most 253). 0, or -EINVAL with why. */
int ca_check_req(const struct ca_issue_req *r, char *why, size_t cap);

#endif
