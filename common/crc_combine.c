/*
 * crc_combine.c — CRC combination over GF(2) (see crc_combine.h).
 *
 * A reflected CRC register of width w holds a polynomial of degree < w
 * with x^0 in the top bit. Appending len2 bytes to A multiplies A's
 * register by x^(8 len2) mod P; the all-ones init and final xor cancel
 * between the two pieces (the same argument as zlib's crc32_combine), so
 *     crc(A || B) = crc(A) * x^(8 len2) mod P  xor  crc(B).
 * x^(8 len2) is assembled from the table x^(2^i) mod P, one product per
 * set bit of 8 len2.
 *
 * Owns: three constant tables of 64 powers, built once.
 */
#include "common/crc_combine.h"

#include <pthread.h>

static const struct {
	uint64_t poly;     /* reflected */
	unsigned width;
} kinds[CRC_KIND__COUNT] = {
	[CRC_KIND_CRC32] = { 0xedb88320u, 32 },
	[CRC_KIND_CRC32C] = { 0x82f63b78u, 32 },
	[CRC_KIND_CRC64NVME] = { 0x9a6c9329ac4bc9b5ull, 64 },
};

static uint64_t x2n[CRC_KIND__COUNT][64];   /* x^(2^i) mod P */
static pthread_once_t x2n_once = PTHREAD_ONCE_INIT;

/* a * b mod P, both reflected registers of kind k. */
static uint64_t multmodp(enum crc_kind k, uint64_t a, uint64_t b)
{
	uint64_t m = 1ull << (kinds[k].width - 1), p = 0;
	if (!a)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ kinds[k].poly : b >> 1;
	}
	return p;
}

static void build_x2n(void)
{
	for (int k = 0; k < CRC_KIND__COUNT; k++) {
		uint64_t p = 1ull << (kinds[k].width - 2);   /* x^1 */
		for (int i = 0; i < 64; i++) {
			x2n[k][i] = p;
			p = multmodp((enum crc_kind)k, p, p);
		}
	}
}

uint64_t crc_combine(enum crc_kind k, uint64_t crc1, uint64_t crc2, uint64_t len2)
{
	if ((unsigned)k >= CRC_KIND__COUNT)
		return 0;
	pthread_once(&x2n_once, build_x2n);
	/* x^(8 len2): bit i of len2 is 2^(i+3) bits; len2 < 2^61 always. */
	uint64_t xp = 1ull << (kinds[k].width - 1);   /* x^0 */
	for (unsigned i = 3; len2 && i < 64; i++, len2 >>= 1)
		if (len2 & 1)
			xp = multmodp(k, x2n[k][i], xp);
	return multmodp(k, xp, crc1) ^ crc2;
}
