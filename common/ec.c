/*
 * ec.c — Reed-Solomon k+m erasure coding of one stripe, over ISA-L.
 *
 * Owns the encode matrix and ISA-L's expanded multiplication tables for one
 * k+m code. The matrix is ISA-L's gf_gen_cauchy1_matrix: an identity on top
 * (shard i < k is data shard i verbatim) and a Cauchy block below
 * (parity row i, column j is 1 / (i ^ j) in GF(2^8), i in k..k+m-1). Every
 * square submatrix of a Cauchy matrix is invertible, so any k of the k+m
 * shards determine the stripe. The parity bytes this produces are part of
 * the on-disk format: changing the matrix makes stored parity unreadable.
 *
 * Invariant: after ec_new() returns, a struct ec_code is never written
 * again, so it may be shared by any number of threads without locks.
 * Encode and decode touch only caller memory and, for decode, a few KiB of
 * stack; neither allocates.
 *
 * Not done here: checksums (each shard block carries a CRC32C, see crc.h),
 * deciding which shards are present (the caller verifies them first: a
 * corrupt shard marked present silently corrupts what is rebuilt), and
 * stripe layout or padding of an object into equal-length shards.
 */
#include "common/ec.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l.h>

/* ISA-L's expanded table for one matrix coefficient: 32 bytes. */
#define GFTBL_BYTES 32

/* Largest k * m with k + m <= EC_MAX_SHARDS (8 * 8). */
#define EC_MAX_KM ((EC_MAX_SHARDS / 2) * (EC_MAX_SHARDS / 2))

/* ISA-L takes lengths as int; longer stripes are coded in pieces of this
 * many bytes. A multiple of 64 keeps every piece but the last on ISA-L's
 * vector path. */
#define EC_CHUNK_BYTES ((size_t)1 << 30)

struct ec_code {
	unsigned k;
	unsigned m;
	/* (k+m) x k row-major: rows 0..k-1 identity, rows k.. parity. */
	uint8_t matrix[EC_MAX_SHARDS * EC_MAX_SHARDS];
	/* ec_init_tables() of the m parity rows: GFTBL_BYTES * k * m bytes. */
	uint8_t tables[];
};

static int check_km(unsigned long k, unsigned long m)
{
	/* Each bound alone first, so k + m cannot wrap. */
	if (k < 1 || k > EC_MAX_SHARDS || m > EC_MAX_SHARDS || k + m > EC_MAX_SHARDS)
		return -EINVAL;
	return 0;
}

int ec_new(unsigned k, unsigned m, struct ec_code **out)
{
	int rc = check_km(k, m);
	if (rc)
		return rc;

	struct ec_code *c = malloc(sizeof(*c) + (size_t)GFTBL_BYTES * k * m);
	if (!c)
		return -ENOMEM;
	c->k = k;
	c->m = m;
	memset(c->matrix, 0, sizeof(c->matrix));
	gf_gen_cauchy1_matrix(c->matrix, (int)(k + m), (int)k);
	if (m)
		ec_init_tables((int)k, (int)m, &c->matrix[k * k], c->tables);
	*out = c;
	return 0;
}

void ec_free(struct ec_code *c)
{
	free(c);
}

unsigned ec_k(const struct ec_code *c)
{
	return c->k;
}

unsigned ec_m(const struct ec_code *c)
{
	return c->m;
}

/* A decimal number of digits only: no sign, no blanks, no base prefix
 * (strtoul accepts all three). Advances *s past it. Values are clamped
 * just above any valid count so that overflow reads as out of range. */
static int parse_count(const char **s, unsigned long *out)
{
	const char *p = *s;
	unsigned long v = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > EC_MAX_SHARDS)
			v = EC_MAX_SHARDS + 1;
	}
	*s = p;
	*out = v;
	return 0;
}

int ec_parse(const char *s, unsigned *k, unsigned *m)
{
	unsigned long kk, mm;

	if (!s || parse_count(&s, &kk) || *s++ != '+' || parse_count(&s, &mm) || *s != '\0')
		return -EINVAL;
	if (check_km(kk, mm))
		return -EINVAL;
	*k = (unsigned)kk;
	*m = (unsigned)mm;
	return 0;
}

/* Run ISA-L over len bytes in int-sized pieces. in[] and out[] are
 * advanced in place, so the caller passes copies it does not need again. */
static void code_chunks(size_t len, unsigned k, unsigned rows, uint8_t *tables, uint8_t **in,
			uint8_t **out)
{
	while (len) {
		size_t n = len < EC_CHUNK_BYTES ? len : EC_CHUNK_BYTES;
		ec_encode_data((int)n, (int)k, (int)rows, tables, in, out);
		for (unsigned i = 0; i < k; i++)
			in[i] += n;
		for (unsigned i = 0; i < rows; i++)
			out[i] += n;
		len -= n;
	}
}

void ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
	       uint8_t *const *parity)
{
	uint8_t *in[EC_MAX_SHARDS];
	uint8_t *out[EC_MAX_SHARDS];

	if (c->m == 0 || len == 0)
		return;
	/* ISA-L's prototypes are not const-correct; it only reads data and
	 * the tables, so casting the const away is safe. */
	for (unsigned i = 0; i < c->k; i++)
		in[i] = (uint8_t *)data[i];
	for (unsigned i = 0; i < c->m; i++)
		out[i] = parity[i];
	code_chunks(len, c->k, c->m, (uint8_t *)c->tables, in, out);
}

/*
 * Rebuild: the k chosen survivors s[0..k-1] satisfy S = B * D, where B
 * holds the encode rows of the survivors and D the data shards. So
 * D = B^-1 * S: wanted data shard d is row d of B^-1 applied to the
 * survivors, and wanted parity shard p is (encode row p) * B^-1 applied to
 * them. All rows together go through one ec_encode_data pass, so each
 * survivor byte is read once however many shards are rebuilt.
 *
 * Wanted shards that are also present are left as they are: the contract
 * says present shards are only read, and their bytes are already right.
 */
int ec_decode(const struct ec_code *c, size_t len, uint8_t *const *shards, uint32_t present,
	      uint32_t want)
{
	const unsigned k = c->k, n = c->k + c->m;
	const uint32_t all = ((uint32_t)1 << n) - 1; /* n <= EC_MAX_SHARDS < 32 */

	if (want & ~all)
		return -EINVAL;
	/* Bits beyond k+m in present name no shard; they count for nothing. */
	present &= all;
	if ((unsigned)__builtin_popcount(present) < k)
		return -EINVAL;
	want &= ~present;
	if (want == 0 || len == 0)
		return 0;

	uint8_t b[EC_MAX_SHARDS * EC_MAX_SHARDS];
	uint8_t binv[EC_MAX_SHARDS * EC_MAX_SHARDS];
	uint8_t rows[EC_MAX_SHARDS * EC_MAX_SHARDS];
	/* Wanted shards are missing ones, so at most m of them, and k * m
	 * peaks at 8 * 8 under k + m <= 16: 2 KiB of tables, not 8. */
	uint8_t tables[GFTBL_BYTES * EC_MAX_KM];
	uint8_t *in[EC_MAX_SHARDS];
	uint8_t *out[EC_MAX_SHARDS];
	unsigned nin = 0, nout = 0;

	/* The first k present shards in index order: data shards before
	 * parity, so with all data present the inverse is the identity and
	 * rebuilding parity is a plain encode. */
	for (unsigned i = 0; i < n && nin < k; i++) {
		if (!(present & ((uint32_t)1 << i)))
			continue;
		assert(shards[i] != NULL);
		memcpy(&b[nin * k], &c->matrix[i * k], k);
		in[nin++] = shards[i];
	}
	/* Cannot fail for a Cauchy code: any k rows are independent. A
	 * failure means the matrix was damaged in memory. */
	if (gf_invert_matrix(b, binv, (int)k) != 0)
		abort();

	for (unsigned i = 0; i < n; i++) {
		if (!(want & ((uint32_t)1 << i)))
			continue;
		assert(shards[i] != NULL);
		uint8_t *row = &rows[nout * k];
		if (i < k) {
			memcpy(row, &binv[i * k], k);
		} else {
			const uint8_t *enc = &c->matrix[i * k];
			for (unsigned j = 0; j < k; j++) {
				uint8_t s = 0;
				for (unsigned t = 0; t < k; t++)
					s ^= gf_mul(enc[t], binv[t * k + j]);
				row[j] = s;
			}
		}
		out[nout++] = shards[i];
	}

	assert(nout * k <= EC_MAX_KM);
	ec_init_tables((int)k, (int)nout, rows, tables);
	code_chunks(len, k, nout, tables, in, out);
	return 0;
}
