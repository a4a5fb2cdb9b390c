/*
 * rootkey.h — the root credentials an operator gives a deployment: read
 * them (IOLAKE_ROOT_ACCESS_KEY / IOLAKE_ROOT_SECRET_KEY, or a file of
 * "access_key=" and "secret_key=" lines), and make sure meta holds them:
 * user "root" (admin) and that access key with that secret.
 *
 * iolake-aio, iolake-meta and iolake-gw all call it, so a cluster started
 * with the same credentials on any of its processes answers them; every
 * step is idempotent, so several processes doing it at once agree. A key
 * of the same id with another secret (credentials changed) is replaced.
 *
 * Client side only: it talks to meta through a meta_client on the
 * caller's loop. rootkey_ensure neither retries nor logs; the runner (for
 * iolake-meta and iolake-gw) does both. rootkey_generate makes a key
 * pair of the same shape for any user (iolake-admin user add, the admin
 * API's new users and keys).
 */
#ifndef META_ROOTKEY_H
#define META_ROOTKEY_H

#include <stddef.h>

#include "meta/client.h"

#define ROOTKEY_MAX 128                  /* access key id or secret, characters */
#define ROOTKEY_ENV_ACCESS "IOLAKE_ROOT_ACCESS_KEY"
#define ROOTKEY_ENV_SECRET "IOLAKE_ROOT_SECRET_KEY"

struct meta_secret;
struct rootkey_creds {
	char access_key[ROOTKEY_MAX + 1];
	char secret_key[ROOTKEY_MAX + 1];
	/* The cluster key that opens a sealed record read back (the caller's,
	 * kept alive as long); NULL: only clear records compare equal. */
	const struct meta_secret *secret;
};

/* Check an access key id (3..128 of A-Z a-z 0-9) and secret (16..128
 * printable ASCII, no space). 0, or -EINVAL with why (static text). */
int rootkey_check(const char *access_key, const char *secret_key, const char **why);

/* A new AWS-shaped key pair from getrandom(2): an access key id of
 * "IOL" and 17 of base32 (A-Z, 2-7), a secret of 40 of base64's
 * alphabet; both pass rootkey_check. No modulo bias (32 and 64 symbols). */
#define ROOTKEY_GEN_ID_LEN 20
#define ROOTKEY_GEN_SECRET_LEN 40
void rootkey_generate(char access_key[ROOTKEY_GEN_ID_LEN + 1],
		      char secret_key[ROOTKEY_GEN_SECRET_LEN + 1]);

/* From the environment: 1 and *out when both variables are set, 0 when
 * neither is, -EINVAL when one is missing or a value is bad (err says
 * which, errlen bytes). */
int rootkey_from_env(struct rootkey_creds *out, char *err, size_t errlen);

/* From a file of "access_key=K" and "secret_key=S" lines (others
 * ignored): 1 and *out, 0 when the file does not exist, -EINVAL (err says
 * why: unreadable, a line missing, a bad value). */
int rootkey_from_file(const char *path, struct rootkey_creds *out, char *err, size_t errlen);

/* Make meta hold user "root" and c's key. cb(ud, 0) once it does (read
 * back), cb(ud, err) on the first failure (a meta_client error, or -EIO
 * when meta refused an op, or -ENOKEY / -EBADMSG when the stored key is
 * sealed under a cluster key c->secret is not: it is left alone); never
 * from inside this call. c is copied.
 * 0, or -ENOMEM / the client's error (cb does not run then). */
typedef void (*rootkey_cb)(void *ud, int err);
int rootkey_ensure(struct meta_client *mc, const struct rootkey_creds *c, rootkey_cb cb,
		   void *ud);

/* What iolake-meta and iolake-gw were given: the environment, else
 * file (the --root-credentials flag; NULL: none), which must then exist.
 * 1 and *out, 0 (none given), -EINVAL (err says why). */
int rootkey_load(const char *file, struct rootkey_creds *out, char *err, size_t errlen);

/* Ensure c in the background on loop: a client of members (any member,
 * redirects followed), rootkey_ensure every second until it succeeds
 * (logged once), then the client is closed. Stop it at shutdown (frees
 * it; safe after it finished). 0 and *out, or -ENOMEM / -EINVAL. */
struct rootkey_runner;
int rootkey_runner_start(uv_loop_t *loop, const char *const *members, size_t n_members,
			 const struct rootkey_creds *c, struct rootkey_runner **out);
void rootkey_runner_stop(struct rootkey_runner *r);

#endif
