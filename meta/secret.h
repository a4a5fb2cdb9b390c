/*
 * secret.h — the cluster key and the sealed form of access key secrets
 * (issue 16). A 256-bit key kept in a file (mode 0600) outside meta's
 * RocksDB and Raft log, given to iolake-meta, iolake-gw (and made by aio
 * and `iolake-admin cluster init-key`) as --secret-key-file. A secret is
 * stored sealed: AES-256-GCM under that key with a random 96-bit nonce,
 * the access key id as associated data (a blob moved to another record
 * does not open), and the key's id in the blob so that a rotation can
 * tell which key sealed what.
 *
 * Blob (AccessKey.secret_sealed), version 1:
 *   [0]      1 (version)
 *   [1..4]   key id, big-endian (first 4 bytes of SHA-256 of a label and
 *            the key: derived, so a wrong key file is named as such)
 *   [5..16]  nonce
 *   [17..]   ciphertext (1..128 bytes), then the 16-byte GCM tag
 *
 * Owns the key bytes (wiped on meta_secret_wipe) and the blob codec. Does
 * not decide who seals (meta's service, before proposing) nor who opens
 * (gateways, rootkey). No state but the struct; any thread.
 */
#ifndef META_SECRET_H
#define META_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "proto/meta.pb-c.h"

#define META_SECRET_KEY_BYTES 32
#define META_SECRET_MAX 128               /* clear secret, bytes */
#define META_SECRET_BLOB_VERSION 1
#define META_SECRET_NONCE_BYTES 12
#define META_SECRET_TAG_BYTES 16
#define META_SECRET_BLOB_HEAD (1 + 4 + META_SECRET_NONCE_BYTES)
#define META_SECRET_BLOB_MAX (META_SECRET_BLOB_HEAD + META_SECRET_MAX + META_SECRET_TAG_BYTES)

struct meta_secret {
	uint8_t key[META_SECRET_KEY_BYTES];
	uint32_t key_id;
};

/* A blob's parts, pointing into it. */
struct meta_secret_blob {
	uint32_t key_id;
	const uint8_t *nonce;             /* META_SECRET_NONCE_BYTES */
	const uint8_t *ct;                /* ct_len bytes, then the tag */
	size_t ct_len;
	const uint8_t *tag;               /* META_SECRET_TAG_BYTES */
};

/* s from raw key bytes (key id derived). */
void meta_secret_init(struct meta_secret *s, const uint8_t key[META_SECRET_KEY_BYTES]);

/* Forget the key (explicit_bzero). */
void meta_secret_wipe(struct meta_secret *s);

/* Read a key file: 64 hex digits and an optional newline, a regular file
 * readable by its owner only (no group or other bits). 0 and *out, or a
 * negative errno with err saying why (naming path, never the key). */
int meta_secret_load(const char *path, struct meta_secret *out, char *err, size_t errlen);

/* Make a new key file at path (O_EXCL, mode 0600) from the OS's random
 * generator. 0, -EEXIST (left alone), or another negative errno (err). */
int meta_secret_create(const char *path, char *err, size_t errlen);

/* Split a blob into its parts. 0, or -EINVAL (too short or long, unknown
 * version). Pure: the fuzz target drives it. */
int meta_secret_blob_parse(const uint8_t *blob, size_t n, struct meta_secret_blob *out);

/* Seal secret (n bytes, 1..META_SECRET_MAX) for access key id (the
 * associated data) into out (at least META_SECRET_BLOB_MAX bytes).
 * The length written, or -EINVAL / -EIO (OpenSSL failed). */
int meta_secret_seal(const struct meta_secret *s, const char *access_key_id,
		     const char *secret, size_t n, uint8_t *out);

/* Open a blob sealed for access_key_id into out (cap bytes, NUL added).
 * The secret's length, or -EINVAL (malformed blob), -ENOKEY (sealed under
 * another key id: *blob_key_id says which, may be NULL), -EBADMSG (the
 * tag does not verify: tampered, or another record's blob), -ENOSPC. */
int meta_secret_open(const struct meta_secret *s, const char *access_key_id,
		     const uint8_t *blob, size_t n, char *out, size_t cap,
		     uint32_t *blob_key_id);

/* The clear secret of an access key record, sealed (opened with s) or
 * an old clear record. s may be NULL (then a sealed record fails
 * -ENOKEY). As meta_secret_open, plus -ENOENT when the record holds no
 * secret at all. */
int meta_secret_of_key(const struct meta_secret *s, const Iolake__Meta__AccessKey *k,
		       char *out, size_t cap, uint32_t *blob_key_id);

/* Seal k's clear secret in place: k->secret_sealed gets a malloc'd blob
 * (the old one freed), k->secret_key is emptied (freed with free(): the
 * message must come from protobuf-c's default allocator). A record
 * already sealed and without a clear secret is left alone. 0, or
 * -EINVAL (no secret, or too long), -ENOMEM, -EIO. */
int meta_secret_seal_key(const struct meta_secret *s, Iolake__Meta__AccessKey *k);

/* A meta data dir remembers the id of the key that seals its secrets
 * (DIR/secret-key-id, the id only): with s, a dir marked with another id
 * is refused (-EKEYREJECTED) and an unmarked one is marked; without s, a
 * marked dir is refused (-ENOKEY): a member must not store new secrets in
 * clear beside sealed ones, nor serve keys no gateway can open. 0, or the
 * error with err saying why. */
int meta_secret_check_dir(const char *dir, const struct meta_secret *s, char *err,
			  size_t errlen);

/* "1a2b3c4d": a key id as 8 hex digits into buf (9 bytes). */
const char *meta_secret_id_str(uint32_t id, char buf[9]);

#endif
