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
 *       --role R[,R...] (meta, osd, gw, admin; required) and --node ID
 *       (required with osd: the OSD id it may register) go into the SAN as
 *       URIs iolake:role:R and iolake:node:ID (common/rpc_authz.h).
 *   ca revoke --dir D [--days N] CERT.pem
 *       adds CERT's serial to D/crl.pem (made if missing), signed by the
 *       CA, valid N days (365): give it to every service as --rpc-tls-crl
 *       and SIGHUP them. Refuses a certificate this CA did not sign.
 *   ca crl --dir D [--days N] [--out FILE]
 *       signs D/crl.pem again (a new nextUpdate; an empty one if none) and
 *       writes it, also to FILE when given.
 *
 * OpenSSL 3's EVP and X509 APIs; no state beyond the two CA files (serial
 * numbers are 128 random bits). Does not talk to the cluster.
 */
#ifndef ADMIN_CA_H
#define ADMIN_CA_H

#include <stddef.h>
#include <stdint.h>
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
	unsigned roles;            /* RPC_ROLE_* bits (common/rpc_authz.h); 0 refused */
	uint32_t node_id;          /* 0: none; required with RPC_ROLE_OSD */
};

/* Add cert_file's serial to dir's CRL (dir/crl.pem) and sign it. */
int ca_revoke(const char *dir, const char *cert_file, unsigned days, char *why, size_t cap);

/* Sign dir's CRL again (empty when there is none) into dir/crl.pem and,
 * when out is not NULL, out. */
int ca_crl(const char *dir, const char *out, unsigned days, char *why, size_t cap);

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
