/*
 * fuzz_secret_blob.c — libFuzzer target for the sealed-secret decoder
 * (meta/secret.c meta_secret_blob_parse and meta_secret_open): the bytes
 * of AccessKey.secret_sealed, read from meta's state by every gateway
 * credential lookup and by rootkey. Oracles: a parsed blob's parts lie
 * inside the input and add up to it; open never succeeds on a blob that
 * does not parse, and what it opens has the ciphertext's length, no NUL,
 * and seals again to a blob that opens to the same bytes. The seed corpus
 * holds blobs sealed under the fixed key below for "AKFUZZ", so the
 * successful path is reached too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meta/secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct meta_secret key;
	static int ready;
	if (!ready) {
		uint8_t raw[META_SECRET_KEY_BYTES];
		for (int i = 0; i < META_SECRET_KEY_BYTES; i++)
			raw[i] = (uint8_t)(i * 7 + 1);
		meta_secret_init(&key, raw);
		ready = 1;
	}
	struct meta_secret_blob b;
	int prc = meta_secret_blob_parse(data, size, &b);
	if (prc == 0) {
		if (b.nonce != data + 5 || b.ct != data + META_SECRET_BLOB_HEAD ||
		    b.ct_len == 0 || b.ct_len > META_SECRET_MAX ||
		    b.tag + META_SECRET_TAG_BYTES != data + size)
			__builtin_trap();
	}
	char out[META_SECRET_MAX + 1];
	uint32_t id = 0;
	int rc = meta_secret_open(&key, "AKFUZZ", data, size, out, sizeof(out), &id);
	if (rc >= 0) {
		if (prc != 0 || (size_t)rc != b.ct_len || memchr(out, 0, (size_t)rc) ||
		    id != key.key_id)
			__builtin_trap();
		uint8_t again[META_SECRET_BLOB_MAX];
		char back[META_SECRET_MAX + 1];
		int n = meta_secret_seal(&key, "AKFUZZ", out, (size_t)rc, again);
		if (n < 0 || meta_secret_open(&key, "AKFUZZ", again, (size_t)n, back, sizeof(back),
					      NULL) != rc || memcmp(back, out, (size_t)rc))
			__builtin_trap();
	} else if (prc != 0 && rc != -22 /* EINVAL */) {
		__builtin_trap();
	}
	return 0;
}
