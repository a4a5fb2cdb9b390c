/*
 * s3_checksum.c — S3 additional checksums. See s3_checksum.h.
 *
 * CRC state is kept in the form the next update wants: CRC32 as the
 * finished value (crc32_gzip_refl inverts on entry and exit, so it
 * chains), CRC32C and CRC64NVME as the raw register (inverted once at
 * final). Values are serialised big-endian, as S3 does.
 *
 * Owns nothing: calculators live in the caller's storage. Does not decide
 * which algorithm a request uses (s3_server does).
 */
#include "gateway/s3_checksum.h"

#include <endian.h>
#include <errno.h>
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/crc_combine.h"

static const struct {
	const char *name;
	const char *header;
	uint8_t len;
} algos[S3_CK__COUNT] = {
	[S3_CK_NONE] = { "", "", 0 },
	[S3_CK_CRC32] = { "CRC32", "x-amz-checksum-crc32", 4 },
	[S3_CK_CRC32C] = { "CRC32C", "x-amz-checksum-crc32c", 4 },
	[S3_CK_SHA1] = { "SHA1", "x-amz-checksum-sha1", 20 },
	[S3_CK_SHA256] = { "SHA256", "x-amz-checksum-sha256", 32 },
	[S3_CK_CRC64NVME] = { "CRC64NVME", "x-amz-checksum-crc64nvme", 8 },
};

static bool valid(enum s3_ck_algo a)
{
	return a > S3_CK_NONE && a < S3_CK__COUNT;
}

size_t s3_ck_len(enum s3_ck_algo a)
{
	return valid(a) ? algos[a].len : 0;
}

const char *s3_ck_name(enum s3_ck_algo a)
{
	return valid(a) ? algos[a].name : "";
}

const char *s3_ck_header(enum s3_ck_algo a)
{
	return valid(a) ? algos[a].header : "";
}

enum s3_ck_algo s3_ck_from_name(const char *s, size_t n)
{
	for (int a = S3_CK_NONE + 1; a < S3_CK__COUNT; a++)
		if (strlen(algos[a].name) == n && strncasecmp(s, algos[a].name, n) == 0)
			return (enum s3_ck_algo)a;
	return S3_CK_NONE;
}

enum s3_ck_algo s3_ck_from_header(const char *s, size_t n)
{
	static const char pfx[] = "x-amz-checksum-";
	if (n <= sizeof(pfx) - 1 || strncasecmp(s, pfx, sizeof(pfx) - 1) != 0)
		return S3_CK_NONE;
	return s3_ck_from_name(s + sizeof(pfx) - 1, n - (sizeof(pfx) - 1));
}

/* ------------------------------------------------------------ CRC64NVME */

static uint64_t crc64_tab[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_init_tab(void)
{
	const uint64_t poly = 0x9a6c9329ac4bc9b5ull; /* 0xad93d23594c93659 reflected */
	for (int i = 0; i < 256; i++) {
		uint64_t c = (uint64_t)i;
		for (int b = 0; b < 8; b++)
			c = c & 1 ? (c >> 1) ^ poly : c >> 1;
		crc64_tab[0][i] = c;
	}
	for (int i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc64_tab[t][i] = (crc64_tab[t - 1][i] >> 8) ^
					  crc64_tab[0][crc64_tab[t - 1][i] & 0xff];
}

/* Slice-by-8 over the raw (uninverted) register. */
static uint64_t crc64_update(uint64_t crc, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		crc ^= le64toh(w);
		crc = crc64_tab[7][crc & 0xff] ^ crc64_tab[6][(crc >> 8) & 0xff] ^
		      crc64_tab[5][(crc >> 16) & 0xff] ^ crc64_tab[4][(crc >> 24) & 0xff] ^
		      crc64_tab[3][(crc >> 32) & 0xff] ^ crc64_tab[2][(crc >> 40) & 0xff] ^
		      crc64_tab[1][(crc >> 48) & 0xff] ^ crc64_tab[0][crc >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ crc64_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

/* ------------------------------------------------------------ streams */

static EVP_MD *md_sha1, *md_sha256;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void fetch_mds(void)
{
	md_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!md_sha1 || !md_sha256)
		abort(); /* OpenSSL without its default provider: nothing works */
}

int s3_ck_init(struct s3_ck *k)
{
	pthread_once(&md_once, fetch_mds);
	pthread_once(&crc64_once, crc64_init_tab);
	memset(k, 0, sizeof(*k));
	k->md = EVP_MD_CTX_new();
	return k->md ? 0 : -ENOMEM;
}

void s3_ck_free(struct s3_ck *k)
{
	EVP_MD_CTX_free(k->md);
	k->md = NULL;
}

void s3_ck_begin(struct s3_ck *k, enum s3_ck_algo a)
{
	k->algo = valid(a) ? a : S3_CK_NONE;
	k->crc32 = 0;
	k->crc64 = ~0ull;
	if (a == S3_CK_CRC32C)
		k->crc32 = 0xffffffffu;
	else if (a == S3_CK_SHA1)
		EVP_DigestInit_ex2(k->md, md_sha1, NULL);
	else if (a == S3_CK_SHA256)
		EVP_DigestInit_ex2(k->md, md_sha256, NULL);
}

void s3_ck_update(struct s3_ck *k, const void *data, size_t len)
{
	const uint8_t *p = data;
	switch (k->algo) {
	case S3_CK_CRC32:
		k->crc32 = crc32_gzip_refl(k->crc32, p, len);
		break;
	case S3_CK_CRC32C:
		/* crc32_iscsi takes an int length. */
		while (len) {
			size_t n = len > (1u << 30) ? 1u << 30 : len;
			k->crc32 = crc32_iscsi((unsigned char *)p, (int)n, k->crc32);
			p += n;
			len -= n;
		}
		break;
	case S3_CK_CRC64NVME:
		k->crc64 = crc64_update(k->crc64, p, len);
		break;
	case S3_CK_SHA1:
	case S3_CK_SHA256:
		EVP_DigestUpdate(k->md, p, len);
		break;
	default:
		break;
	}
}

static void put_be(uint8_t *out, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		out[i] = (uint8_t)v;
}

void s3_ck_final(struct s3_ck *k, struct s3_ck_value *out)
{
	memset(out, 0, sizeof(*out));
	out->algo = k->algo;
	out->len = (uint8_t)s3_ck_len(k->algo);
	switch (k->algo) {
	case S3_CK_CRC32:
		put_be(out->raw, k->crc32, 4);
		break;
	case S3_CK_CRC32C:
		put_be(out->raw, k->crc32 ^ 0xffffffffu, 4);
		break;
	case S3_CK_CRC64NVME:
		put_be(out->raw, ~k->crc64, 8);
		break;
	case S3_CK_SHA1:
	case S3_CK_SHA256:
		EVP_DigestFinal_ex(k->md, out->raw, NULL);
		break;
	default:
		break;
	}
	k->algo = S3_CK_NONE;
}

int s3_ck_compute(enum s3_ck_algo a, const void *data, size_t len, struct s3_ck_value *out)
{
	struct s3_ck k;
	if (s3_ck_init(&k))
		return -ENOMEM;
	s3_ck_begin(&k, a);
	s3_ck_update(&k, data, len);
	s3_ck_final(&k, out);
	s3_ck_free(&k);
	return 0;
}

/* ------------------------------------------------------------ base64 */

size_t s3_ck_to_base64(const struct s3_ck_value *v, char out[S3_CK_B64_MAX])
{
	if (!valid(v->algo) || v->len != s3_ck_len(v->algo)) {
		out[0] = '\0';
		return 0;
	}
	return (size_t)EVP_EncodeBlock((unsigned char *)out, v->raw, v->len);
}

int s3_ck_from_base64(enum s3_ck_algo a, const char *s, size_t n, struct s3_ck_value *out)
{
	size_t len = s3_ck_len(a);
	if (!len || n != (len + 2) / 3 * 4)
		return -EINVAL;
	uint8_t raw[S3_CK_MAX_LEN + 3];
	if (EVP_DecodeBlock(raw, (const unsigned char *)s, (int)n) != (int)(n / 4 * 3))
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->algo = a;
	out->len = (uint8_t)len;
	memcpy(out->raw, raw, len);
	/* Only the canonical spelling: padding where it belongs, zero
	 * trailing bits (EVP_DecodeBlock reads '=' as zero bits). */
	char again[S3_CK_B64_MAX];
	if (s3_ck_to_base64(out, again) != n || memcmp(again, s, n) != 0)
		return -EINVAL;
	return 0;
}

bool s3_ck_equal(const struct s3_ck_value *x, const struct s3_ck_value *y)
{
	return x->algo == y->algo && x->len == y->len && memcmp(x->raw, y->raw, x->len) == 0;
}

/* ------------------------------------------------------------ multipart */

bool s3_ck_type_ok(enum s3_ck_algo a, bool full)
{
	if (full)
		return a == S3_CK_CRC32 || a == S3_CK_CRC32C || a == S3_CK_CRC64NVME;
	return valid(a) && a != S3_CK_CRC64NVME;
}

static enum crc_kind crc_kind_of(enum s3_ck_algo a)
{
	return a == S3_CK_CRC32 ? CRC_KIND_CRC32 : a == S3_CK_CRC32C ? CRC_KIND_CRC32C
								     : CRC_KIND_CRC64NVME;
}

static uint64_t get_be(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

int s3_ck_parts_begin(struct s3_ck_parts *m, enum s3_ck_algo a, bool full)
{
	memset(m, 0, sizeof(*m));
	if (!s3_ck_type_ok(a, full))
		return -EINVAL;
	m->algo = a;
	m->full = full;
	if (!full) {
		if (s3_ck_init(&m->k))
			return -ENOMEM;
		s3_ck_begin(&m->k, a);
	}
	return 0;
}

void s3_ck_parts_add(struct s3_ck_parts *m, const struct s3_ck_value *part, uint64_t size)
{
	if (part->algo != m->algo || part->len != s3_ck_len(m->algo))
		return;
	if (m->full)
		m->crc = crc_combine(crc_kind_of(m->algo), m->crc, get_be(part->raw, part->len), size);
	else
		s3_ck_update(&m->k, part->raw, part->len);
}

void s3_ck_parts_final(struct s3_ck_parts *m, struct s3_ck_value *out)
{
	if (m->full) {
		memset(out, 0, sizeof(*out));
		out->algo = m->algo;
		out->len = (uint8_t)s3_ck_len(m->algo);
		put_be(out->raw, m->crc, out->len);
		return;
	}
	s3_ck_final(&m->k, out);
	s3_ck_free(&m->k);
}
