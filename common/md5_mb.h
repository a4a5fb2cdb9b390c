/*
 * md5_mb.h — multi-buffer MD5: many independent streams hashed at once in
 * the lanes of one vector register (AVX-512: 16 lanes, AVX2: 8), with
 * OpenSSL's MD5 as the scalar path for lone streams, tails and CPUs
 * without AVX2.
 *
 * MD5 is sequential within a stream, but N streams are N independent
 * chains: one AVX-512 instruction advances 16 of them. A lane kernel costs
 * about what one scalar block does, so 16 busy lanes hash ~5x the bytes
 * of one core's OpenSSL MD5 (docs/performance.md), and 1 busy lane
 * wastes the rest: the caller (common/md5_svc.c) keeps lanes full.
 *
 * A context is a plain OpenSSL MD5_CTX: the lane kernel reads and writes
 * its A..D chaining words and bit count, OpenSSL its partial block, so a
 * stream may move between the lane path and the scalar path at any byte.
 * The kernel is chosen once, at the first call, with
 * __builtin_cpu_supports (md5_mb_force overrides it for tests and
 * benches).
 *
 * Thread-safety: a context belongs to one thread at a time; the functions
 * keep no shared state but the kernel choice.
 *
 * Does not: allocate, schedule streams into lanes (md5_svc), know ETags.
 */
#ifndef COMMON_MD5_MB_H
#define COMMON_MD5_MB_H

#include <stddef.h>
#include <stdint.h>

#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED   /* MD5_CTX's fields: see above */
#endif
#include <openssl/md5.h>

#define MD5_MB_MAX_LANES 16

struct md5_mb_ctx {
	MD5_CTX c;
};

/* Start (or restart) a stream. */
void md5_mb_init(struct md5_mb_ctx *x);

/* Hash len bytes of one stream on the calling thread (OpenSSL). */
void md5_mb_update(struct md5_mb_ctx *x, const void *data, size_t len);

/* Write the 16-byte digest and restart the stream. */
void md5_mb_final(struct md5_mb_ctx *x, uint8_t out[16]);

/* Hash n distinct streams at once (x[i] all different): len[i] bytes at
 * data[i] into x[i]
 * (any lengths, 0 included; n any count: more than the lanes run in
 * turns). The whole-block middles run in lanes; partial heads and tails,
 * and a stream left alone in its turn, run scalar. */
void md5_mb_update_n(struct md5_mb_ctx *const *x, const uint8_t *const *data,
		     const size_t *len, unsigned n);

/* The lanes of the kernel in use: 16 (AVX-512), 8 (AVX2) or 1 (scalar). */
unsigned md5_mb_lanes(void);

/* The kernel's name: "avx512", "avx2" or "scalar". */
const char *md5_mb_kernel(void);

/* Use the kernel with that many lanes (16, 8 or 1) from now on: 0, or
 * -ENOTSUP when this CPU lacks it. For tests and benches; not while
 * another thread hashes. */
int md5_mb_force(unsigned lanes);

#endif
