/*
 * fuzz_md5_mb.c — libFuzzer target for common/md5_mb: exact MD5 in lanes.
 *
 * Input: byte 0 picks the kernel (16 lanes, 8, scalar; one the CPU lacks
 * falls back to scalar) and the stream count (1..24), byte 1 the number
 * of calls (1..8); then, for each call and stream, two bytes of length
 * (little-endian, masked to 0..4095) taken from the rest of the input,
 * which is also the data: stream i's bytes of a call start at an offset
 * that depends on i (different alignments). Every stream is fed the same
 * bytes through OpenSSL's MD5; the digests must be equal.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/md5_mb.h"

#define MAXS 24

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
	if (n < 2)
		return 0;
	static const unsigned kernels[] = { 16, 8, 1 };
	if (md5_mb_force(kernels[in[0] % 3]))
		md5_mb_force(1);
	unsigned ns = 1 + (in[0] / 3) % MAXS, calls = 1 + in[1] % 8;
	const uint8_t *data = in + 2;
	size_t dn = n - 2, cur = 0;
	/* A copy the exact size of the data: ASan sees a read past it. */
	uint8_t *buf = malloc(dn ? dn : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, dn);
	struct md5_mb_ctx c[MAXS], *cp[MAXS];
	MD5_CTX ref[MAXS];
	for (unsigned i = 0; i < ns; i++) {
		md5_mb_init(&c[i]);
		MD5_Init(&ref[i]);
	}
	for (unsigned k = 0; k < calls; k++) {
		const uint8_t *d[MAXS];
		size_t l[MAXS];
		unsigned m = 0;
		for (unsigned i = 0; i < ns; i++) {
			size_t len = 0;
			if (cur + 2 <= dn) {
				len = (buf[cur] | (size_t)buf[cur + 1] << 8) & 4095;
				cur += 2;
			}
			if (!dn)
				len = 0;
			size_t off = dn ? (i * 17 + k) % dn : 0;
			if (len > dn - off)
				len = dn - off;
			if (!len && (i + k) % 2)
				continue;   /* some streams skip a call */
			cp[m] = &c[i];
			d[m] = buf + off;
			l[m] = len;
			MD5_Update(&ref[i], buf + off, len);
			m++;
		}
		md5_mb_update_n(cp, d, l, m);
	}
	for (unsigned i = 0; i < ns; i++) {
		uint8_t a[16], b[16];
		md5_mb_final(&c[i], a);
		MD5_Final(b, &ref[i]);
		if (memcmp(a, b, 16))
			abort();
	}
	free(buf);
	return 0;
}
