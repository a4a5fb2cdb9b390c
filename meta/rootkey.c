/*
 * rootkey.c — root credentials: read from the environment or a file, and
 * made to exist in meta (contracts in rootkey.h).
 *
 * ensure is a small state machine over meta_client calls:
 *   GET key -> same secret: done
 *           -> absent: PUT user root (EXISTS is fine) -> PUT key -> GET key
 *           -> another secret: DELETE key -> PUT user ...
 * It reads the key back before saying done, and gives up with -EIO after
 * ROUNDS rounds that did not converge (another process keeps writing a
 * different secret under the same id).
 *
 * Thread: the meta_client's loop.
 */
#include "meta/rootkey.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/secret.h"

#define ROUNDS 3

static void random_text(char *out, size_t n, const char *alphabet)
{
	size_t k = strlen(alphabet);
	uint8_t r[64];
	while (getrandom(r, n, 0) != (ssize_t)n)
		;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[r[i] % k];   /* 32 and 64 symbols: no modulo bias */
	out[n] = 0;
}

void rootkey_generate(char access_key[ROOTKEY_GEN_ID_LEN + 1],
		      char secret_key[ROOTKEY_GEN_SECRET_LEN + 1])
{
	memcpy(access_key, "IOL", 3);
	random_text(access_key + 3, ROOTKEY_GEN_ID_LEN - 3, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
	random_text(secret_key, ROOTKEY_GEN_SECRET_LEN,
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
}

int rootkey_check(const char *ak, const char *sk, const char **why)
{
	size_t al = strlen(ak), sl = strlen(sk);
	if (al < 3 || al > ROOTKEY_MAX) {
		*why = "access key must be 3 to 128 characters";
		return -EINVAL;
	}
	for (size_t i = 0; i < al; i++)
		if (!isalnum((unsigned char)ak[i])) {
			*why = "access key may hold only A-Z, a-z and 0-9";
			return -EINVAL;
		}
	if (sl < 16 || sl > ROOTKEY_MAX) {
		*why = "secret key must be 16 to 128 characters";
		return -EINVAL;
	}
	for (size_t i = 0; i < sl; i++)
		if (!isgraph((unsigned char)sk[i])) {
			*why = "secret key may hold only printable characters, no space";
			return -EINVAL;
		}
	return 0;
}

static int fill(struct rootkey_creds *out, const char *ak, const char *sk, const char *src,
		char *err, size_t errlen)
{
	const char *why;
	if (rootkey_check(ak, sk, &why)) {
		snprintf(err, errlen, "%s: %s", src, why);
		return -EINVAL;
	}
	snprintf(out->access_key, sizeof(out->access_key), "%s", ak);
	snprintf(out->secret_key, sizeof(out->secret_key), "%s", sk);
	out->secret = NULL;
	return 1;
}

int rootkey_from_env(struct rootkey_creds *out, char *err, size_t errlen)
{
	const char *ak = getenv(ROOTKEY_ENV_ACCESS), *sk = getenv(ROOTKEY_ENV_SECRET);
	bool has_a = ak && *ak, has_s = sk && *sk;
	if (!has_a && !has_s)
		return 0;
	if (has_a != has_s) {
		snprintf(err, errlen, "set both %s and %s, or neither", ROOTKEY_ENV_ACCESS,
			 ROOTKEY_ENV_SECRET);
		return -EINVAL;
	}
	return fill(out, ak, sk, ROOTKEY_ENV_ACCESS " / " ROOTKEY_ENV_SECRET, err, errlen);
}

int rootkey_from_file(const char *path, struct rootkey_creds *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	char ak[ROOTKEY_MAX + 2] = "", sk[ROOTKEY_MAX + 2] = "";
	char line[300];
	bool too_long = false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		char *dst = !strncmp(line, "access_key=", 11) ? ak
			  : !strncmp(line, "secret_key=", 11) ? sk : NULL;
		if (!dst)
			continue;
		if (strlen(line + 11) > ROOTKEY_MAX)
			too_long = true;
		else
			memcpy(dst, line + 11, strlen(line + 11) + 1);
	}
	fclose(f);
	if (too_long) {
		snprintf(err, errlen, "%s: a key longer than %d characters", path, ROOTKEY_MAX);
		return -EINVAL;
	}
	if (!ak[0] || !sk[0]) {
		snprintf(err, errlen, "%s: no access_key= / secret_key= lines", path);
		return -EINVAL;
	}
	return fill(out, ak, sk, path, err, errlen);
}

/* ------------------------------------------------------------ ensure */

enum step { GET_KEY, PUT_USER, DEL_KEY, PUT_KEY };

struct ensure {
	struct meta_client *mc;
	struct rootkey_creds c;
	rootkey_cb cb;
	void *ud;
	unsigned rounds;
};

static void step(struct ensure *e, enum step s);

static void finish(struct ensure *e, int err)
{
	rootkey_cb cb = e->cb;
	void *ud = e->ud;
	free(e);
	cb(ud, err);
}

static void on_key(void *ud, int err, const ProtobufCMessage *resp)
{
	struct ensure *e = ud;
	const Iolake__Meta__GetAccessKeyResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		finish(e, err);
		return;
	}
	bool found = !err && r->status == IOLAKE__META__STATUS__STATUS_OK && r->key;
	char have[META_SECRET_MAX + 1];
	int orc = found ? meta_secret_of_key(e->c.secret, r->key, have, sizeof(have), NULL) : -ENOENT;
	bool same = orc >= 0 && !strcmp(have, e->c.secret_key);
	explicit_bzero(have, sizeof(have));
	if (orc == -ENOKEY || orc == -EBADMSG) {
		/* Sealed under a key we lack (no or another --secret-key-file):
		 * we cannot tell whether it is ours, and replacing it would
		 * churn a key that others can open. Fail; nothing written. */
		finish(e, orc);
		return;
	}
	if (same && !strcmp(r->key->user, "root")) {
		finish(e, 0);
		return;
	}
	if (++e->rounds > ROUNDS) {
		finish(e, -EIO);
		return;
	}
	step(e, found ? DEL_KEY : PUT_USER);
}

static void on_op(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index, enum step next)
{
	struct ensure *e = ud;
	(void)index;
	if (!err && res->status != IOLAKE__META__STATUS__STATUS_OK &&
	    res->status != IOLAKE__META__STATUS__STATUS_EXISTS &&
	    res->status != IOLAKE__META__STATUS__STATUS_NOT_FOUND)
		err = -EIO;
	if (err) {
		finish(e, err);
		return;
	}
	step(e, next);
}

static void on_user(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	on_op(ud, err, res, index, PUT_KEY);
}

static void on_del(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	on_op(ud, err, res, index, PUT_USER);
}

static void on_put_key(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	on_op(ud, err, res, index, GET_KEY);
}

/* Start step s: 0, or the client's refusal (its callback will not run). */
static int start(struct ensure *e, enum step s)
{
	uint64_t now_ms = (uint64_t)time(NULL) * 1000;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	switch (s) {
	case GET_KEY: {
		Iolake__Meta__GetAccessKeyRequest q = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
		q.access_key_id = e->c.access_key;
		return meta_client_call(e->mc, META_M_GET_ACCESS_KEY, &q.base, on_key, e);
	}
	case PUT_USER: {
		Iolake__Meta__User u = IOLAKE__META__USER__INIT;
		u.name = "root";
		u.display_name = "root";
		u.admin = true;
		u.created_ms = now_ms;
		Iolake__Meta__PutUser pu = IOLAKE__META__PUT_USER__INIT;
		pu.user = &u;
		op.body_case = IOLAKE__META__OP__BODY_PUT_USER;
		op.put_user = &pu;
		return meta_client_submit(e->mc, &op, on_user, e);
	}
	case DEL_KEY: {
		Iolake__Meta__DeleteAccessKey dk = IOLAKE__META__DELETE_ACCESS_KEY__INIT;
		dk.access_key_id = e->c.access_key;
		op.body_case = IOLAKE__META__OP__BODY_DELETE_ACCESS_KEY;
		op.delete_access_key = &dk;
		return meta_client_submit(e->mc, &op, on_del, e);
	}
	case PUT_KEY: {
		Iolake__Meta__AccessKey k = IOLAKE__META__ACCESS_KEY__INIT;
		k.access_key_id = e->c.access_key;
		k.secret_key = e->c.secret_key;
		k.user = "root";
		k.created_ms = now_ms;
		Iolake__Meta__PutAccessKey pk = IOLAKE__META__PUT_ACCESS_KEY__INIT;
		pk.key = &k;
		op.body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
		op.put_access_key = &pk;
		return meta_client_submit(e->mc, &op, on_put_key, e);
	}
	}
	return -EINVAL;
}

/* A later step, from a callback: a refusal ends the run through cb. */
static void step(struct ensure *e, enum step s)
{
	int rc = start(e, s);
	if (rc)
		finish(e, rc);
}

int rootkey_ensure(struct meta_client *mc, const struct rootkey_creds *c, rootkey_cb cb,
		   void *ud)
{
	struct ensure *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->mc = mc;
	e->c = *c;
	e->cb = cb;
	e->ud = ud;
	int rc = start(e, GET_KEY);
	if (rc)
		free(e);
	return rc;
}

/* ------------------------------------------------------------ load, runner */

int rootkey_load(const char *file, struct rootkey_creds *out, char *err, size_t errlen)
{
	int rc = rootkey_from_env(out, err, errlen);
	if (rc || !file)
		return rc;
	rc = rootkey_from_file(file, out, err, errlen);
	if (rc == 0) {
		snprintf(err, errlen, "%s: no such file", file);
		return -EINVAL;
	}
	return rc;
}

#define RUNNER_RETRY_MS 1000

struct rootkey_runner {
	struct meta_client *mc;
	uv_timer_t timer;
	struct rootkey_creds c;
	bool busy;                 /* an ensure is running (it owns a callback) */
	bool stopped;
	bool ensured;              /* the client is closed on the next timer turn */
	unsigned failures;
};

static void runner_try(uv_timer_t *t);

static void on_runner_closed(uv_handle_t *h)
{
	free(h->data);
}

static void runner_done(struct rootkey_runner *r)
{
	if (r->mc) {
		meta_client_close(r->mc);
		r->mc = NULL;
	}
}

static void on_ensured(void *ud, int err)
{
	struct rootkey_runner *r = ud;
	r->busy = false;
	if (r->stopped) {
		uv_close((uv_handle_t *)&r->timer, on_runner_closed);
		return;
	}
	if (!err) {
		LOG_INFO("root credentials are in meta", "access_key=%s", LOG_Q(r->c.access_key));
		/* Not from inside the client's own callback. */
		r->ensured = true;
		uv_timer_start(&r->timer, runner_try, 0, 0);
		return;
	}
	/* Meta has no leader yet at a cluster's first start: quiet at first. */
	if (++r->failures == 10 || r->failures % 60 == 0)
		LOG_WARN("root credentials not in meta yet; retrying", "err=%s tries=%u",
			 LOG_Q(iol_strerror(err)), r->failures);
	uv_timer_start(&r->timer, runner_try, RUNNER_RETRY_MS, 0);
}

static void runner_try(uv_timer_t *t)
{
	struct rootkey_runner *r = t->data;
	if (r->ensured) {
		runner_done(r);
		return;
	}
	if (rootkey_ensure(r->mc, &r->c, on_ensured, r) == 0)
		r->busy = true;
	else
		uv_timer_start(&r->timer, runner_try, RUNNER_RETRY_MS, 0);
}

int rootkey_runner_start(uv_loop_t *loop, const char *const *members, size_t n_members,
			 const struct rootkey_creds *c, struct rootkey_runner **out)
{
	struct rootkey_runner *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = *c;
	struct meta_client_opts o = { .members = members, .n_members = n_members };
	int rc = meta_client_new(loop, &o, &r->mc);
	if (rc) {
		free(r);
		return rc;
	}
	uv_timer_init(loop, &r->timer);
	r->timer.data = r;
	uv_timer_start(&r->timer, runner_try, 0, 0);
	*out = r;
	return 0;
}

void rootkey_runner_stop(struct rootkey_runner *r)
{
	if (!r)
		return;
	r->stopped = true;
	uv_timer_stop(&r->timer);
	/* Closing the client fails a running ensure, whose callback then
	 * closes the timer; else close it now. */
	bool busy = r->busy;
	runner_done(r);
	if (!busy)
		uv_close((uv_handle_t *)&r->timer, on_runner_closed);
}
