/*
 * secret.c — the cluster key file and AES-256-GCM sealing of access key
 * secrets (contracts and blob layout in secret.h). OpenSSL 3 EVP; no
 * state beyond the caller's struct meta_secret; any thread.
 *
 * Never prints a key or a secret: errors name the file and the cause.
 */
#include "meta/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char ID_LABEL[] = "iolake cluster key id v1";
static const char AAD_LABEL[] = "iolake access key secret v1:";

void meta_secret_init(struct meta_secret *s, const uint8_t key[META_SECRET_KEY_BYTES])
{
	memcpy(s->key, key, META_SECRET_KEY_BYTES);
	uint8_t md[32];
	unsigned mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(c, ID_LABEL, sizeof(ID_LABEL) - 1) &&
	    EVP_DigestUpdate(c, key, META_SECRET_KEY_BYTES) && EVP_DigestFinal_ex(c, md, &mdlen))
		s->key_id = (uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 | (uint32_t)md[2] << 8 |
			    md[3];
	else
		s->key_id = 0;   /* no memory: an id that opens nothing sealed */
	EVP_MD_CTX_free(c);
}

void meta_secret_wipe(struct meta_secret *s)
{
	explicit_bzero(s, sizeof(*s));
}

const char *meta_secret_id_str(uint32_t id, char buf[9])
{
	snprintf(buf, 9, "%08x", id);
	return buf;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int meta_secret_load(const char *path, struct meta_secret *out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);   /* a symlink is fine: fstat checks the file */
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	char buf[80];
	ssize_t n = -1;
	int rc = 0;
	if (fstat(fd, &st)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a regular file", path);
	} else if (st.st_mode & 077) {
		rc = -EPERM;
		snprintf(err, errlen, "%s: mode %03o lets others read the cluster key "
			 "(chmod 600 it)", path, (unsigned)(st.st_mode & 0777));
	} else if ((n = read(fd, buf, sizeof(buf))) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	}
	close(fd);
	if (rc)
		return rc;
	size_t len = (size_t)n;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	uint8_t key[META_SECRET_KEY_BYTES];
	if (len != 2 * META_SECRET_KEY_BYTES) {
		rc = -EINVAL;
	} else {
		for (size_t i = 0; i < META_SECRET_KEY_BYTES && !rc; i++) {
			int hi = hexval(buf[2 * i]), lo = hexval(buf[2 * i + 1]);
			if (hi < 0 || lo < 0)
				rc = -EINVAL;
			else
				key[i] = (uint8_t)(hi << 4 | lo);
		}
	}
	if (rc)
		snprintf(err, errlen, "%s: not a cluster key (want 64 hex digits; make one "
			 "with iolake-admin cluster init-key)", path);
	else
		meta_secret_init(out, key);
	explicit_bzero(buf, sizeof(buf));
	explicit_bzero(key, sizeof(key));
	return rc;
}

int meta_secret_create(const char *path, char *err, size_t errlen)
{
	uint8_t key[META_SECRET_KEY_BYTES];
	char hex[2 * META_SECRET_KEY_BYTES + 2];
	if (RAND_bytes(key, sizeof(key)) != 1) {
		snprintf(err, errlen, "%s: the random generator failed", path);
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(key); i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	hex[2 * sizeof(key)] = '\n';
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int rc = 0;
	if (fd < 0) {
		rc = -errno;
		if (rc != -EEXIST)
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		else
			snprintf(err, errlen, "%s: exists (left as it is)", path);
	} else {
		size_t want = 2 * sizeof(key) + 1;
		if (write(fd, hex, want) != (ssize_t)want || fsync(fd)) {
			rc = errno ? -errno : -EIO;
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		}
		close(fd);
		if (rc)
			unlink(path);
	}
	explicit_bzero(key, sizeof(key));
	explicit_bzero(hex, sizeof(hex));
	return rc;
}

int meta_secret_blob_parse(const uint8_t *blob, size_t n, struct meta_secret_blob *out)
{
	if (!blob || n < META_SECRET_BLOB_HEAD + 1 + META_SECRET_TAG_BYTES ||
	    n > META_SECRET_BLOB_MAX || blob[0] != META_SECRET_BLOB_VERSION)
		return -EINVAL;
	out->key_id = (uint32_t)blob[1] << 24 | (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 8 |
		      blob[4];
	out->nonce = blob + 5;
	out->ct = blob + META_SECRET_BLOB_HEAD;
	out->ct_len = n - META_SECRET_BLOB_HEAD - META_SECRET_TAG_BYTES;
	out->tag = out->ct + out->ct_len;
	return 0;
}

/* GCM over (aad label || id) with key; enc: seal, else open. The number
 * of output bytes, or -EIO / -EBADMSG. */
static int gcm(const struct meta_secret *s, bool enc, const char *id, const uint8_t *nonce,
	       const uint8_t *in, size_t n, uint8_t *out, uint8_t *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0, rc = -EIO;
	if (!c)
		return -ENOMEM;
	if (EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc ? 1 : 0) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, META_SECRET_NONCE_BYTES, NULL) != 1 ||
	    EVP_CipherInit_ex(c, NULL, NULL, s->key, nonce, enc ? 1 : 0) != 1 ||
	    EVP_CipherUpdate(c, NULL, &len, (const uint8_t *)AAD_LABEL,
			     (int)sizeof(AAD_LABEL) - 1) != 1 ||
	    EVP_CipherUpdate(c, NULL, &len, (const uint8_t *)id, (int)strlen(id)) != 1 ||
	    EVP_CipherUpdate(c, out, &len, in, (int)n) != 1)
		goto out;
	if (!enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, META_SECRET_TAG_BYTES,
					tag) != 1)
		goto out;
	if (EVP_CipherFinal_ex(c, out + len, &fin) != 1) {
		rc = enc ? -EIO : -EBADMSG;
		goto out;
	}
	if (enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, META_SECRET_TAG_BYTES, tag) != 1)
		goto out;
	rc = len + fin;
out:
	EVP_CIPHER_CTX_free(c);
	return rc;
}

int meta_secret_seal(const struct meta_secret *s, const char *access_key_id,
		     const char *secret, size_t n, uint8_t *out)
{
	if (!s || !access_key_id || !secret || n == 0 || n > META_SECRET_MAX)
		return -EINVAL;
	out[0] = META_SECRET_BLOB_VERSION;
	out[1] = (uint8_t)(s->key_id >> 24);
	out[2] = (uint8_t)(s->key_id >> 16);
	out[3] = (uint8_t)(s->key_id >> 8);
	out[4] = (uint8_t)s->key_id;
	uint8_t *nonce = out + 5;
	if (RAND_bytes(nonce, META_SECRET_NONCE_BYTES) != 1)
		return -EIO;
	uint8_t *ct = out + META_SECRET_BLOB_HEAD;
	int rc = gcm(s, true, access_key_id, nonce, (const uint8_t *)secret, n, ct, ct + n);
	if (rc < 0)
		return rc;
	return (int)(META_SECRET_BLOB_HEAD + n + META_SECRET_TAG_BYTES);
}

int meta_secret_open(const struct meta_secret *s, const char *access_key_id,
		     const uint8_t *blob, size_t n, char *out, size_t cap,
		     uint32_t *blob_key_id)
{
	struct meta_secret_blob b;
	if (meta_secret_blob_parse(blob, n, &b) || !access_key_id)
		return -EINVAL;
	if (blob_key_id)
		*blob_key_id = b.key_id;
	if (!s || b.key_id != s->key_id)
		return -ENOKEY;
	if (b.ct_len + 1 > cap)
		return -ENOSPC;
	uint8_t tag[META_SECRET_TAG_BYTES];
	memcpy(tag, b.tag, sizeof(tag));
	int rc = gcm(s, false, access_key_id, b.nonce, b.ct, b.ct_len, (uint8_t *)out, tag);
	if (rc < 0) {
		explicit_bzero(out, cap);
		return rc;
	}
	out[rc] = '\0';
	if (memchr(out, '\0', (size_t)rc)) {   /* sealed by us: never holds a NUL */
		explicit_bzero(out, cap);
		return -EINVAL;
	}
	return rc;
}

int meta_secret_of_key(const struct meta_secret *s, const Iolake__Meta__AccessKey *k,
		       char *out, size_t cap, uint32_t *blob_key_id)
{
	if (k->secret_sealed.len)
		return meta_secret_open(s, k->access_key_id, k->secret_sealed.data,
					k->secret_sealed.len, out, cap, blob_key_id);
	if (!k->secret_key || !k->secret_key[0])
		return -ENOENT;
	size_t n = strlen(k->secret_key);
	if (n + 1 > cap)
		return -ENOSPC;
	memcpy(out, k->secret_key, n + 1);
	return (int)n;
}

int meta_secret_seal_key(const struct meta_secret *s, Iolake__Meta__AccessKey *k)
{
	if (!k->secret_key || !k->secret_key[0])
		return k->secret_sealed.len ? 0 : -EINVAL;
	size_t n = strlen(k->secret_key);
	if (!k->access_key_id || n > META_SECRET_MAX)
		return -EINVAL;
	uint8_t *blob = malloc(META_SECRET_BLOB_MAX);
	if (!blob)
		return -ENOMEM;
	int len = meta_secret_seal(s, k->access_key_id, k->secret_key, n, blob);
	if (len < 0) {
		free(blob);
		return len;
	}
	free(k->secret_sealed.data);
	k->secret_sealed.data = blob;
	k->secret_sealed.len = (size_t)len;
	explicit_bzero(k->secret_key, n);
	free(k->secret_key);
	k->secret_key = (char *)protobuf_c_empty_string;
	return 0;
}

int meta_secret_check_dir(const char *dir, const struct meta_secret *s, char *err,
			  size_t errlen)
{
	char path[4200], have[16] = "", want[9];
	snprintf(path, sizeof(path), "%s/secret-key-id", dir);
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(have, sizeof(have), f))
			have[0] = '\0';
		fclose(f);
		have[strcspn(have, "\r\n")] = '\0';
	} else if (errno != ENOENT) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (!s) {
		if (!have[0])
			return 0;
		snprintf(err, errlen, "%s holds secrets sealed under cluster key %s: start with "
			 "--secret-key-file FILE (that key)", dir, have);
		return -ENOKEY;
	}
	meta_secret_id_str(s->key_id, want);
	if (have[0]) {
		if (strcmp(have, want) == 0)
			return 0;
		snprintf(err, errlen, "%s holds secrets sealed under cluster key %s, and "
			 "--secret-key-file holds key %s", dir, have, want);
		return -EKEYREJECTED;
	}
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f || fprintf(f, "%s\n", want) < 0 || fflush(f) || fsync(fileno(f))) {
		int e = errno ? errno : EIO;
		if (f)
			fclose(f);
		snprintf(err, errlen, "%s: %s", tmp, strerror(e));
		return -e;
	}
	fclose(f);
	if (rename(tmp, path)) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}
