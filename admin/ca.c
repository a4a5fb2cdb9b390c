/*
 * ca.c — iolake-admin ca init / issue / revoke / crl (contract in ca.h):
 * the cluster CA, node certificates with their roles (common/rpc_authz.h)
 * and the revocation list, for mutual TLS on RPC and Raft
 * (common/rpc_tls.h).
 *
 * Owns: key generation (EC P-256 via EVP_EC_gen), certificate building
 * and signing (X509 with v3 extensions, SHA-256), the files' modes and
 * their atomic placement. Does not own: loading or verifying certificates
 * (common/tls.c), the cluster.
 */
#include "admin/ca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/flags.h"
#include "common/rpc_authz.h"

#define CRL_DAYS_DEFAULT 365
#define CA_DAYS_DEFAULT 3650
#define NODE_DAYS_DEFAULT 825
#define CA_MAX_SANS 32
#define BACKDATE_S 300 /* notBefore: clocks a little apart still agree */

static int ossl_err(char *why, size_t cap, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char reason[200] = "unknown error";
	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	snprintf(why, cap, "%s: %s", what, reason);
	ERR_clear_error();
	return -EIO;
}

/* ------------------------------------------------------------ checks */

static bool dns_ok(const char *h)
{
	size_t n = strlen(h);
	if (n == 0 || n > 253)
		return false;
	const char *p = h;
	if (!strncmp(p, "*.", 2))
		p += 2;
	size_t label = 0;
	for (; *p; p++) {
		char c = *p;
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-'))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

int ca_check_req(const struct ca_issue_req *r, char *why, size_t cap)
{
	size_t n = r->name ? strlen(r->name) : 0;
	if (n == 0 || n > 64) {
		snprintf(why, cap, "--name must be 1 to 64 bytes");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r->name[i];
		if (c < 0x20 || c > 0x7e || c == '/') {
			snprintf(why, cap, "--name may hold printable ASCII only (no '/')");
			return -EINVAL;
		}
	}
	if (r->n_ips + r->n_dns > CA_MAX_SANS) {
		snprintf(why, cap, "at most %d --ip and --dns names", CA_MAX_SANS);
		return -EINVAL;
	}
	for (size_t i = 0; i < r->n_ips; i++) {
		unsigned char a[16];
		if (inet_pton(AF_INET, r->ips[i], a) != 1 && inet_pton(AF_INET6, r->ips[i], a) != 1) {
			snprintf(why, cap, "--ip %.64s is not an IPv4 or IPv6 address", r->ips[i]);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < r->n_dns; i++)
		if (!dns_ok(r->dns[i])) {
			snprintf(why, cap, "--dns %.64s is not a host name", r->dns[i]);
			return -EINVAL;
		}
	if (!r->roles || (r->roles & ~(unsigned)RPC_ROLE_ALL)) {
		snprintf(why, cap, "--role is required: meta, osd, gw, admin or user (several with "
			 "commas)");
		return -EINVAL;
	}
	if ((r->roles & RPC_ROLE_OSD) && !r->node_id) {
		snprintf(why, cap, "--role osd needs --node ID (the OSD id it registers as)");
		return -EINVAL;
	}
	if (r->days == 0 || r->days > 36500) {
		snprintf(why, cap, "--days must be 1 to 36500");
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------ files */

/* Write PEM through fn to path (mode), by a temporary file renamed into
 * place. */
static int write_pem(const char *path, mode_t mode, int (*fn)(FILE *, void *), void *obj,
		     char *why, size_t cap)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(why, cap, "path too long: %.64s", path);
		return -ENAMETOOLONG;
	}
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		int e = errno;
		snprintf(why, cap, "cannot create %s: %s", tmp, strerror(e));
		return -e;
	}
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		snprintf(why, cap, "cannot write %s", tmp);
		return -EIO;
	}
	int ok = fn(f, obj);
	ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return ossl_err(why, cap, path);
	}
	return 0;
}

static int put_key(FILE *f, void *k)
{
	return PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1;
}

static int put_cert(FILE *f, void *x)
{
	return PEM_write_X509(f, x) == 1;
}

static void join(char *out, size_t cap, const char *dir, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

/* ------------------------------------------------------------ certificates */

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return -1;
	int ok = X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return ok == 1 ? 0 : -1;
}

/* A certificate for key, with subject CN, valid days, a random serial. */
static X509 *cert_new(EVP_PKEY *key, const char *cn, unsigned days)
{
	X509 *x = X509_new();
	if (!x)
		return NULL;
	unsigned char rnd[16];
	BIGNUM *bn = NULL;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		goto fail;
	rnd[0] &= 0x7f; /* positive */
	bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		goto fail;
	if (X509_set_version(x, 2) != 1 || !X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_S) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), (int)days, 0, NULL) ||
	    X509_set_pubkey(x, key) != 1)
		goto fail;
	X509_NAME *n = X509_get_subject_name(x);
	if (!X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"IOLake", -1,
					-1, 0) ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0))
		goto fail;
	BN_free(bn);
	return x;
fail:
	BN_free(bn);
	X509_free(x);
	return NULL;
}

static EVP_PKEY *load_key(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	return k;
}

static X509 *load_cert(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

int ca_init(const char *dir, unsigned days, char *why, size_t cap)
{
	char kp[4096], cp[4096];
	/* mkdir -p: parents too. */
	snprintf(kp, sizeof(kp), "%s", dir);
	for (char *p = kp + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			(void)mkdir(kp, 0755);
			*p = '/';
		}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		int e = errno;
		snprintf(why, cap, "cannot make %s: %s", dir, strerror(e));
		return -e;
	}
	join(kp, sizeof(kp), dir, "ca.key");
	join(cp, sizeof(cp), dir, "ca.pem");
	if (access(kp, F_OK) == 0) {
		snprintf(why, cap, "%s exists: a cluster has one CA (move it away to make another)",
			 kp);
		return -EEXIST;
	}
	ERR_clear_error();
	int rc = -EIO;
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = key ? cert_new(key, "IOLake cluster CA", days) : NULL;
	if (!x) {
		rc = ossl_err(why, cap, "cannot make the CA key and certificate");
		goto out;
	}
	if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") ||
	    X509_sign(x, key, EVP_sha256()) <= 0) {
		rc = ossl_err(why, cap, "cannot sign the CA certificate");
		goto out;
	}
	if ((rc = write_pem(kp, 0600, put_key, key, why, cap)))
		goto out;
	rc = write_pem(cp, 0644, put_cert, x, why, cap);
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

int ca_issue(const char *dir, const struct ca_issue_req *r, const char *prefix, char *why,
	     size_t cap)
{
	int rc = ca_check_req(r, why, cap);
	if (rc)
		return rc;
	char kp[4096], cp[4096], okp[4200], ocp[4200];
	join(kp, sizeof(kp), dir, "ca.key");
	join(cp, sizeof(cp), dir, "ca.pem");
	snprintf(okp, sizeof(okp), "%s.key", prefix);
	snprintf(ocp, sizeof(ocp), "%s.pem", prefix);
	ERR_clear_error();
	EVP_PKEY *cakey = load_key(kp), *key = NULL;
	X509 *ca = load_cert(cp), *x = NULL;
	char *san = NULL;
	rc = -EIO;
	if (!cakey || !ca) {
		snprintf(why, cap, "cannot read the CA in %s (ca.key and ca.pem; made by ca init)",
			 dir);
		ERR_clear_error();
		goto out;
	}
	if (X509_check_private_key(ca, cakey) != 1) {
		rc = ossl_err(why, cap, "ca.key does not match ca.pem");
		goto out;
	}
	key = EVP_EC_gen("P-256");
	x = key ? cert_new(key, r->name, r->days) : NULL;
	if (!x) {
		rc = ossl_err(why, cap, "cannot make the key and certificate");
		goto out;
	}
	size_t sl = 1 + 4 * 32 + 32;   /* roles and node URIs */
	for (size_t i = 0; i < r->n_ips; i++)
		sl += strlen(r->ips[i]) + 5;
	for (size_t i = 0; i < r->n_dns; i++)
		sl += strlen(r->dns[i]) + 6;
	san = calloc(1, sl);
	if (!san) {
		rc = -ENOMEM;
		snprintf(why, cap, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < r->n_ips; i++)
		sprintf(san + strlen(san), "%sIP:%s", san[0] ? "," : "", r->ips[i]);
	for (size_t i = 0; i < r->n_dns; i++)
		sprintf(san + strlen(san), "%sDNS:%s", san[0] ? "," : "", r->dns[i]);
	for (unsigned bit = 1; bit <= RPC_ROLE_USER; bit <<= 1)
		if (r->roles & bit)
			sprintf(san + strlen(san), "%sURI:%srole:%s", san[0] ? "," : "",
				RPC_AUTHZ_URI_PREFIX, rpc_role_name(bit));
	if (r->node_id)
		sprintf(san + strlen(san), "%sURI:%snode:%u", san[0] ? "," : "",
			RPC_AUTHZ_URI_PREFIX, (unsigned)r->node_id);
	if (X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") ||
	    add_ext(x, ca, NID_key_usage, "critical,digitalSignature") ||
	    add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth") ||
	    add_ext(x, ca, NID_subject_key_identifier, "hash") ||
	    add_ext(x, ca, NID_authority_key_identifier, "keyid:always") ||
	    (san[0] && add_ext(x, ca, NID_subject_alt_name, san)) ||
	    X509_sign(x, cakey, EVP_sha256()) <= 0) {
		rc = ossl_err(why, cap, "cannot sign the certificate");
		goto out;
	}
	if ((rc = write_pem(okp, 0600, put_key, key, why, cap)))
		goto out;
	rc = write_pem(ocp, 0644, put_cert, x, why, cap);
out:
	free(san);
	X509_free(x);
	X509_free(ca);
	EVP_PKEY_free(key);
	EVP_PKEY_free(cakey);
	return rc;
}

/* ------------------------------------------------------------ revocation */

static int put_crl(FILE *f, void *c)
{
	return PEM_write_X509_CRL(f, c) == 1;
}

static X509_CRL *load_crl_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	X509_CRL *c = PEM_read_X509_CRL(f, NULL, NULL, NULL);
	fclose(f);
	return c;
}

/* dir's CA, or -EIO with why. */
static int load_ca(const char *dir, EVP_PKEY **key, X509 **ca, char *why, size_t cap)
{
	char kp[4096], cp[4096];
	join(kp, sizeof(kp), dir, "ca.key");
	join(cp, sizeof(cp), dir, "ca.pem");
	*key = load_key(kp);
	*ca = load_cert(cp);
	if (!*key || !*ca) {
		snprintf(why, cap, "cannot read the CA in %s (ca.key and ca.pem; made by ca init)", dir);
		ERR_clear_error();
		return -EIO;
	}
	if (X509_check_private_key(*ca, *key) != 1)
		return ossl_err(why, cap, "ca.key does not match ca.pem");
	return 0;
}

/* dir/crl.pem with serial added (when not NULL and not listed yet), its
 * dates renewed, signed by the CA; written to dir/crl.pem and out. */
static int crl_update(const char *dir, const ASN1_INTEGER *serial, const char *out,
		      unsigned days, bool *already, char *why, size_t cap)
{
	char crlp[4096];
	join(crlp, sizeof(crlp), dir, "crl.pem");
	ERR_clear_error();
	EVP_PKEY *key = NULL;
	X509 *ca = NULL;
	X509_CRL *crl = NULL;
	ASN1_TIME *now = NULL;
	int rc = load_ca(dir, &key, &ca, why, cap);
	if (rc)
		goto out;
	rc = -EIO;
	crl = load_crl_file(crlp);
	if (!crl && access(crlp, F_OK) == 0) {
		rc = ossl_err(why, cap, "cannot read the existing crl.pem (move it away?)");
		goto out;
	}
	ERR_clear_error();
	if (crl && X509_CRL_verify(crl, key) != 1) {
		rc = ossl_err(why, cap, "crl.pem is not signed by this CA");
		goto out;
	}
	if (!crl && (!(crl = X509_CRL_new()) || X509_CRL_set_version(crl, 1) != 1 ||
		     X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca)) != 1)) {
		rc = ossl_err(why, cap, "cannot make a CRL");
		goto out;
	}
	now = X509_gmtime_adj(NULL, 0);
	if (!now) {
		rc = ossl_err(why, cap, "cannot read the clock");
		goto out;
	}
	if (serial) {
		X509_REVOKED *rv = NULL;
		*already = X509_CRL_get0_by_serial(crl, &rv, serial) == 1;
		if (!*already) {
			rv = X509_REVOKED_new();
			if (!rv || X509_REVOKED_set_serialNumber(rv, (ASN1_INTEGER *)serial) != 1 ||
			    X509_REVOKED_set_revocationDate(rv, now) != 1 ||
			    X509_CRL_add0_revoked(crl, rv) != 1) {
				X509_REVOKED_free(rv);
				rc = ossl_err(why, cap, "cannot add the serial to the CRL");
				goto out;
			}
		}
	}
	ASN1_TIME *next = X509_time_adj_ex(NULL, (int)days, 0, NULL);
	int ok = next && X509_CRL_set1_lastUpdate(crl, now) == 1 &&
		 X509_CRL_set1_nextUpdate(crl, next) == 1;
	ASN1_TIME_free(next);
	X509_CRL_sort(crl);
	if (!ok || X509_CRL_sign(crl, key, EVP_sha256()) <= 0) {
		rc = ossl_err(why, cap, "cannot sign the CRL");
		goto out;
	}
	if ((rc = write_pem(crlp, 0644, put_crl, crl, why, cap)))
		goto out;
	if (out && strcmp(out, crlp))
		rc = write_pem(out, 0644, put_crl, crl, why, cap);
out:
	ASN1_TIME_free(now);
	X509_CRL_free(crl);
	X509_free(ca);
	EVP_PKEY_free(key);
	return rc;
}

int ca_revoke(const char *dir, const char *cert_file, unsigned days, char *why, size_t cap)
{
	X509 *x = load_cert(cert_file);
	if (!x) {
		ERR_clear_error();
		snprintf(why, cap, "cannot read the certificate %s (PEM)", cert_file);
		return -EIO;
	}
	EVP_PKEY *key = NULL;
	X509 *ca = NULL;
	int rc = load_ca(dir, &key, &ca, why, cap);
	if (!rc) {
		EVP_PKEY *pub = X509_get0_pubkey(ca);
		if (!pub || X509_verify(x, pub) != 1) {
			ERR_clear_error();
			snprintf(why, cap, "%s was not issued by the CA in %s", cert_file, dir);
			rc = -EINVAL;
		}
	}
	bool already = false;
	if (!rc)
		rc = crl_update(dir, X509_get0_serialNumber(x), NULL, days, &already, why, cap);
	X509_free(ca);
	EVP_PKEY_free(key);
	X509_free(x);
	return rc;
}

int ca_crl(const char *dir, const char *out, unsigned days, char *why, size_t cap)
{
	bool already;
	return crl_update(dir, NULL, out, days, &already, why, cap);
}

/* ------------------------------------------------------------ command */

static const char usage[] =
	"usage: iolake-admin ca init --dir DIR [--days N]\n"
	"       iolake-admin ca issue --dir DIR --name NAME --role ROLE[,ROLE...] [--node ID]\n"
	"                             [--ip ADDR,...] [--dns HOST,...] [--days N] --out PREFIX\n"
	"       iolake-admin ca revoke --dir DIR [--days N] CERT.pem\n"
	"       iolake-admin ca crl --dir DIR [--days N] [--out FILE]\n"
	"roles: meta (Raft and member calls), osd (--node: its OSD id), gw (the data path),\n"
	"       admin (users, keys, members, the map); a gateway serving the admin API: gw,admin;\n"
	"       user (a client of the native port only: its calls are signed with S3 keys)\n";

/* "meta,osd" into bits; 0 when empty or a name is unknown. */
static unsigned parse_roles(const struct flag_list *l)
{
	unsigned r = 0;
	for (size_t i = 0; i < l->n; i++) {
		unsigned b = rpc_role_parse(l->items[i], strlen(l->items[i]));
		if (!b)
			return 0;
		r |= b;
	}
	return r;
}

int admin_ca(int nargs, char **args, FILE *out, FILE *err)
{
	static const char *const verbs[] = { "init", "issue", "revoke", "crl" };
	int verb = -1;
	for (int i = 0; nargs >= 1 && i < 4; i++)
		if (!strcmp(args[0], verbs[i]))
			verb = i;
	if (verb < 0) {
		fputs(usage, err);
		return 2;
	}
	bool init = verb == 0, issue = verb == 1, revoke = verb == 2, crl = verb == 3;
	const char *dir = NULL, *name = NULL, *prefix = NULL, *cert = NULL;
	int64_t days = init ? CA_DAYS_DEFAULT : issue ? NODE_DAYS_DEFAULT : CRL_DAYS_DEFAULT;
	int64_t node = 0;
	struct flag_list ips = { 0 }, dns = { 0 }, roles = { 0 };
	const struct flag_spec specs[] = {
		{ .name = "dir", .type = FLAG_STRING, .dst = &dir, .required = true,
		  .metavar = "DIR", .help = "the CA's directory (ca.key, ca.pem, crl.pem)" },
		{ .name = "days", .type = FLAG_INT64, .dst = &days, .min = 1, .max = 36500,
		  .help = "validity in days (of the CRL for revoke and crl)" },
		{ .name = "name", .type = FLAG_STRING, .dst = &name, .metavar = "NAME",
		  .help = "issue: the subject's common name" },
		{ .name = "role", .type = FLAG_LIST, .dst = &roles, .metavar = "ROLE,...",
		  .help = "issue: meta, osd, gw, admin (subjectAltName URI iolake:role:ROLE)" },
		{ .name = "node", .type = FLAG_INT64, .dst = &node, .min = 1, .max = UINT32_MAX,
		  .metavar = "ID", .help = "issue: the node id (URI iolake:node:ID; the OSD id for osd)" },
		{ .name = "ip", .type = FLAG_LIST, .dst = &ips, .metavar = "ADDR,...",
		  .help = "issue: IP addresses (subjectAltName)" },
		{ .name = "dns", .type = FLAG_LIST, .dst = &dns, .metavar = "HOST,...",
		  .help = "issue: host names (subjectAltName)" },
		{ .name = "out", .type = FLAG_STRING, .dst = &prefix, .metavar = "PREFIX",
		  .help = "issue: write PREFIX.pem and PREFIX.key; crl: also write the CRL there" },
		{ .name = "cert", .type = FLAG_STRING, .dst = &cert, .metavar = "CERT.pem",
		  .help = "revoke: the certificate (or as the last argument)" },
		{ 0 }
	};
	/* flags_parse reads from index 1: args[0] is the verb. */
	char why[512];
	int pos;
	int rc = flags_parse(specs, nargs, args, &pos, why, sizeof(why));
	if (rc == FLAGS_HELP) {
		fputs(usage, out);
		flags_free(specs);
		return 0;
	}
	if (rc >= 0 && revoke && !cert && pos == nargs - 1)
		cert = args[pos++];
	bool bad = rc < 0 || pos != nargs;
	bool issue_only = name || ips.n || dns.n || roles.n || node;
	if (issue)
		bad = bad || !name || !prefix || cert;
	else
		bad = bad || issue_only || (!crl && prefix) || (!revoke && cert) || (revoke && !cert);
	if (bad) {
		fprintf(err, "iolake-admin: ca %s: %s\n%s", args[0], rc < 0 ? why : "wrong arguments",
			usage);
		flags_free(specs);
		return 2;
	}
	if (init) {
		rc = ca_init(dir, (unsigned)days, why, sizeof(why));
		if (!rc)
			fprintf(out, "cluster CA written to %s/ca.pem (certificate: give it to every "
				"service as --rpc-tls-ca) and %s/ca.key (mode 0600: keep it off the "
				"nodes)\n", dir, dir);
	} else if (issue) {
		struct ca_issue_req r = { .name = name, .ips = (const char *const *)ips.items,
					  .n_ips = ips.n, .dns = (const char *const *)dns.items,
					  .n_dns = dns.n, .days = (unsigned)days,
					  .roles = parse_roles(&roles), .node_id = (uint32_t)node };
		if (roles.n && !r.roles) {
			fprintf(err, "iolake-admin: ca issue: --role: each must be meta, osd, gw or "
				"admin\n");
			flags_free(specs);
			return 2;
		}
		rc = ca_check_req(&r, why, sizeof(why));
		if (rc) {
			fprintf(err, "iolake-admin: ca issue: %s\n", why);
			flags_free(specs);
			return 2;
		}
		rc = ca_issue(dir, &r, prefix, why, sizeof(why));
		if (!rc) {
			char rs[64];
			rpc_roles_format(r.roles, rs, sizeof(rs));
			fprintf(out, "certificate for %s (roles %s", name, rs);
			if (r.node_id)
				fprintf(out, ", node %u", (unsigned)r.node_id);
			fprintf(out, ") written to %s.pem and its key to %s.key (mode 0600): "
				"--rpc-tls-cert and --rpc-tls-key\n", prefix, prefix);
		}
	} else if (revoke) {
		rc = ca_revoke(dir, cert, (unsigned)days, why, sizeof(why));
		if (!rc)
			fprintf(out, "%s revoked: %s/crl.pem updated; copy it to every service's "
				"--rpc-tls-crl and send them SIGHUP\n", cert, dir);
	} else {
		rc = ca_crl(dir, prefix, (unsigned)days, why, sizeof(why));
		if (!rc)
			fprintf(out, "CRL signed for %lld days: %s/crl.pem%s%s\n", (long long)days, dir,
				prefix ? " and " : "", prefix ? prefix : "");
	}
	flags_free(specs);
	if (rc) {
		fprintf(err, "iolake-admin: error: ca %s: %s\n", args[0], why);
		return 1;
	}
	return 0;
}
