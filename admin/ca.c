/*
 * ca.c — iolake-admin ca init / ca issue (contract in ca.h): the cluster
 * CA and node certificates for mutual TLS on RPC (common/rpc_tls.h).
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
	size_t sl = 1;
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

/* ------------------------------------------------------------ command */

static const char usage[] =
	"usage: iolake-admin ca init --dir DIR [--days N]\n"
	"       iolake-admin ca issue --dir DIR --name NAME [--ip ADDR,...] [--dns HOST,...]\n"
	"                             [--days N] --out PREFIX\n";

int admin_ca(int nargs, char **args, FILE *out, FILE *err)
{
	if (nargs < 1 || (strcmp(args[0], "init") && strcmp(args[0], "issue"))) {
		fputs(usage, err);
		return 2;
	}
	bool init = !strcmp(args[0], "init");
	const char *dir = NULL, *name = NULL, *prefix = NULL;
	int64_t days = init ? CA_DAYS_DEFAULT : NODE_DAYS_DEFAULT;
	struct flag_list ips = { 0 }, dns = { 0 };
	const struct flag_spec specs[] = {
		{ .name = "dir", .type = FLAG_STRING, .dst = &dir, .required = true,
		  .metavar = "DIR", .help = "the CA's directory (ca.key, ca.pem)" },
		{ .name = "days", .type = FLAG_INT64, .dst = &days, .min = 1, .max = 36500,
		  .help = "validity in days" },
		{ .name = "name", .type = FLAG_STRING, .dst = &name, .metavar = "NAME",
		  .help = "issue: the subject's common name" },
		{ .name = "ip", .type = FLAG_LIST, .dst = &ips, .metavar = "ADDR,...",
		  .help = "issue: IP addresses (subjectAltName)" },
		{ .name = "dns", .type = FLAG_LIST, .dst = &dns, .metavar = "HOST,...",
		  .help = "issue: host names (subjectAltName)" },
		{ .name = "out", .type = FLAG_STRING, .dst = &prefix, .metavar = "PREFIX",
		  .help = "issue: write PREFIX.pem and PREFIX.key" },
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
	if (rc < 0 || pos != nargs || (!init && (!name || !prefix)) ||
	    (init && (name || prefix || ips.n || dns.n))) {
		fprintf(err, "iolake-admin: ca %s: %s\n%s", args[0],
			rc < 0 ? why : "wrong arguments", usage);
		flags_free(specs);
		return 2;
	}
	if (init) {
		rc = ca_init(dir, (unsigned)days, why, sizeof(why));
		if (!rc)
			fprintf(out, "cluster CA written to %s/ca.pem (certificate: give it to every "
				"service as --rpc-tls-ca) and %s/ca.key (mode 0600: keep it off the "
				"nodes)\n", dir, dir);
	} else {
		struct ca_issue_req r = { .name = name, .ips = ips.items, .n_ips = ips.n,
					  .dns = dns.items, .n_dns = dns.n, .days = (unsigned)days };
		rc = ca_check_req(&r, why, sizeof(why));
		if (rc) {
			fprintf(err, "iolake-admin: ca issue: %s\n", why);
			flags_free(specs);
			return 2;
		}
		rc = ca_issue(dir, &r, prefix, why, sizeof(why));
		if (!rc)
			fprintf(out, "certificate for %s written to %s.pem and its key to %s.key "
				"(mode 0600): --rpc-tls-cert and --rpc-tls-key\n", name, prefix, prefix);
	}
	flags_free(specs);
	if (rc) {
		fprintf(err, "iolake-admin: error: ca %s: %s\n", args[0], why);
		return 1;
	}
	return 0;
}
