/*
 * iolake.h — libiolake, the C client of IOLake's native protocol (issue 19,
 * docs/native-protocol.md): object PUT / GET / HEAD / DELETE / LIST over
 * one HTTP/2 connection to a gateway's native listener, signed with the
 * same access keys as S3.
 *
 * Synchronous: each call returns when the gateway has answered (a PUT once
 * the object is durable and committed). A handle owns a private event loop
 * and one connection; it is not thread-safe: use one handle per thread.
 *
 * Errors: calls return IOLAKE_OK (0) or a negative IOLAKE_E* code;
 * iolake_errmsg() then holds the gateway's "Code: detail" (an S3 error
 * name such as NoSuchKey or AccessDenied) or the transport's reason.
 *
 * Link: build/libiolake.a (with -lprotobuf-c -lnghttp2 -luv -lssl -lcrypto
 * -lisal -lm) or build/libiolake.so.
 */
#ifndef IOLAKE_H
#define IOLAKE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum iolake_err {
	IOLAKE_OK = 0,
	IOLAKE_EINVAL = -1,     /* a bad argument (here or at the gateway) */
	IOLAKE_ENOENT = -2,     /* NoSuchKey, NoSuchBucket, NoSuchUpload */
	IOLAKE_EACCES = -3,     /* AccessDenied, QuotaExceeded */
	IOLAKE_EAUTH = -4,      /* a wrong key or secret, a clock off by more than 15 min */
	IOLAKE_EUNAVAIL = -5,   /* gateway unreachable, timed out or unavailable: retry */
	IOLAKE_ECHANGED = -6,   /* the object changed during a multi-call read */
	IOLAKE_ERANGE = -7,     /* a range past the object's end */
	IOLAKE_EIO = -8,        /* anything else (the message says what) */
	IOLAKE_ENOMEM = -9,
	IOLAKE_ETOOBIG = -10,   /* an object over 5 GiB, or a buffer too small */
};

typedef struct iolake iolake_t;

struct iolake_opts {
	const char *region;     /* of the signature's scope; NULL: "us-east-1" */
	uint32_t timeout_ms;    /* per call; 0: 60000 */
	int unsigned_payload;   /* 1: send UNSIGNED-PAYLOAD instead of each body's SHA-256
				 * (signed calls only: after a login bodies are never hashed) */
	int64_t debug_clock_offset_s; /* tests only: sign as if the clock were this far off */
	/* Mutual TLS (the gateway's --rpc-tls-* make its native listener
	 * TLS): the cluster CA and a certificate and key it signed (PEM
	 * files: `iolake-admin ca issue`). All NULL: plaintext HTTP/2. */
	const char *tls_ca, *tls_cert, *tls_key;
	/* 1: sign every call (SigV4, as S3). 0: log the connection in once
	 * (Hello, then a signed Login) and send later calls unsigned; again
	 * after a reconnect; every call signed against a gateway without
	 * logins. */
	int sign_each_call;
};

/* What the gateway knows of an object. */
struct iolake_info {
	uint64_t size;
	char etag[80];          /* without quotes; "<hex>-0" when stored with skip_md5 */
	uint64_t mtime_ms;
	char content_type[256];
};

/* Open a handle to endpoint "host:port" (the gateway's --native-listen;
 * aio prints it as "native:"). opts may be NULL. Connects lazily. NULL
 * when out of memory, an argument is empty or the TLS files do not load
 * (the reason on stderr); never for a gateway that is down (the first
 * call says so). */
iolake_t *iolake_open(const char *endpoint, const char *access_key, const char *secret_key,
		      const struct iolake_opts *opts);

/* Close the connection and free c (NULL is ignored). */
void iolake_close(iolake_t *c);

/* The last failed call's message ("" after a success). Valid until the
 * next call on c. */
const char *iolake_errmsg(const iolake_t *c);

/* "EINVAL", "ENOENT", ... for a code. */
const char *iolake_strerror(int err);

struct iolake_put_opts {
	const char *content_type;  /* NULL: none */
	int skip_md5;              /* 1: no MD5 (an opaque "<hex>-0" ETag) */
};

/* Store len bytes (any size up to 5 GiB: above 16 MiB the body goes in
 * 16 MiB calls) under bucket/key. po and info may be NULL; info gets the
 * ETag and size. */
int iolake_put(iolake_t *c, const char *bucket, const char *key, const void *data, size_t len,
	       const struct iolake_put_opts *po, struct iolake_info *info);

/* The same, the body pulled from read(arg, buf, cap): the bytes it put in
 * buf (> 0), 0 at the end, or < 0 to give up (IOLAKE_EIO). Exactly size
 * bytes must come. */
typedef long (*iolake_read_fn)(void *arg, void *buf, size_t cap);
int iolake_put_stream(iolake_t *c, const char *bucket, const char *key, uint64_t size,
		      iolake_read_fn read, void *arg, const struct iolake_put_opts *po,
		      struct iolake_info *info);

/* Read bytes [off, off+len) of bucket/key (len 0: to the end) into buf
 * (cap bytes): *got the bytes read. IOLAKE_ETOOBIG when cap is short. */
int iolake_get(iolake_t *c, const char *bucket, const char *key, uint64_t off, uint64_t len,
	       void *buf, size_t cap, size_t *got, struct iolake_info *info);

/* The same, the bytes handed to write(arg, data, n) in order as they come
 * (16 MiB at a time at most); write returns 0, or non-zero to stop
 * (IOLAKE_EIO). A read of several calls fails IOLAKE_ECHANGED when the
 * object is replaced meanwhile. */
typedef int (*iolake_write_fn)(void *arg, const void *data, size_t n);
int iolake_get_cb(iolake_t *c, const char *bucket, const char *key, uint64_t off, uint64_t len,
		  iolake_write_fn write, void *arg, struct iolake_info *info);

int iolake_head(iolake_t *c, const char *bucket, const char *key, struct iolake_info *info);

/* Delete bucket/key (a missing key is a success, as S3's). */
int iolake_delete(iolake_t *c, const char *bucket, const char *key);

/* One listed name: a key (is_prefix 0, with its info) or a common prefix. */
struct iolake_entry {
	const char *name;
	int is_prefix;
	uint64_t size;
	const char *etag;
	uint64_t mtime_ms;
};
/* Return 0 to go on, non-zero to stop. */
typedef int (*iolake_list_fn)(void *arg, const struct iolake_entry *e);

/* List bucket under prefix (NULL: all), grouping at delimiter (NULL:
 * none), from after start_after (NULL: the start), at most max_keys
 * names in all (0: every one), page by page. */
int iolake_list(iolake_t *c, const char *bucket, const char *prefix, const char *delimiter,
		const char *start_after, uint64_t max_keys, iolake_list_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif
