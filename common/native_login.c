/*
 * native_login.c — Hello, then a Login signed over its challenge, on one
 * channel (contract in native_login.h).
 */
#include "common/native_login.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/native_sig.h"
#include "common/proto/native_methods.h"

struct login {
	struct rpc_channel *ch;
	uint8_t key[32];
	char ak[129], region[64], amz_date[17];
	uint32_t timeout_ms;
	native_login_cb cb;
	void *ud;
};

static void done(struct login *l, int status, const char *message, const char *user)
{
	l->cb(l->ud, status, message, user);
	explicit_bzero(l->key, sizeof(l->key));
	free(l);
}

static void on_login(void *ud, const struct rpc_result *res)
{
	struct login *l = ud;
	const Iolake__Native__LoginResponse *r = (const void *)res->resp;
	done(l, res->status, res->message, res->status == RPC_OK && r->user ? r->user : "");
}

static void on_hello(void *ud, const struct rpc_result *res)
{
	struct login *l = ud;
	if (res->status != RPC_OK) {
		done(l, res->status, res->message, "");
		return;
	}
	const Iolake__Native__HelloResponse *h = (const void *)res->resp;
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	Iolake__Native__LoginRequest req = IOLAKE__NATIVE__LOGIN_REQUEST__INIT;
	req.auth = &auth;
	req.challenge = h->challenge;
	char authz[NATIVE_SIG_AUTHZ_MAX];
	char sha[] = SIGV4_UNSIGNED_PAYLOAD;
	if (native_sig_sign(l->key, l->ak, l->region, l->amz_date, NATIVE_SVC, NATIVE_M_LOGIN,
			    &req.base, sha, authz)) {
		done(l, RPC_INVALID_ARGUMENT, "InvalidRequest: cannot sign the Login", "");
		return;
	}
	auth.authorization = authz;
	auth.amz_date = l->amz_date;
	auth.content_sha256 = sha;
	struct rpc_call_opts co = { .timeout_ms = l->timeout_ms };
	rpc_call(l->ch, NATIVE_SVC, NATIVE_M_LOGIN, &req.base, NULL, &co, on_login, l);
}

int native_login_start(struct rpc_channel *ch, const uint8_t key[32], const char *access_key,
		       const char *region, const char *amz_date, uint32_t timeout_ms,
		       native_login_cb cb, void *ud)
{
	struct login *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ch = ch;
	memcpy(l->key, key, 32);
	snprintf(l->ak, sizeof(l->ak), "%s", access_key);
	snprintf(l->region, sizeof(l->region), "%s", region);
	snprintf(l->amz_date, sizeof(l->amz_date), "%s", amz_date);
	l->timeout_ms = timeout_ms;
	l->cb = cb;
	l->ud = ud;
	Iolake__Native__HelloRequest req = IOLAKE__NATIVE__HELLO_REQUEST__INIT;
	struct rpc_call_opts co = { .timeout_ms = timeout_ms };
	rpc_call(ch, NATIVE_SVC, NATIVE_M_HELLO, &req.base, NULL, &co, on_hello, l);
	return 0;
}

bool native_login_required(int status, const char *message)
{
	return status == RPC_UNAUTHENTICATED && !strncmp(message, "LoginRequired:", 14);
}
