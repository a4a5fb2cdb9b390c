/*
 * native_session.c — raw native-protocol calls for test_native.py's
 * session checks (docs/native-protocol.md, "Sessions"), which libiolake and
 * the CLI cannot make on purpose: a call with no login, a Login replayed
 * on another connection or twice, a Login with a wrong signature, an
 * unsigned Login, and a logged-in connection held open across a change
 * made elsewhere (a key deleted).
 *
 *   native-session check EP AK SK BUCKET KEY
 *       every refusal above, and an unsigned Head of BUCKET/KEY after a
 *       good login; prints "ok: ..." or "FAIL: ..." per step; exit 0 when
 *       all held, 1 otherwise.
 *   native-session hold EP AK SK BUCKET KEY
 *       logs in, Heads BUCKET/KEY unsigned and prints "ready STATUS", then
 *       for every line read on stdin Heads it again on the same connection
 *       and prints "STATUS MESSAGE"; exit 0 at end of input.
 *   native-session relogin EP AK SK BUCKET KEY
 *       the same through one libiolake handle (iolake_head; the handle
 *       logs in on its first call): prints "ready RC", then per line read
 *       "RC MESSAGE". Across a gateway restart between two lines the
 *       handle's channel reconnects, its unsigned call meets
 *       LoginRequired, and the handle logs in again and resends it.
 *
 * Two connections are two rpc_channels to EP. Exit 2: bad arguments.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/native_login.h"
#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "common/rpc.h"
#include "lib/include/iolake.h"

static uv_loop_t loop;
static const char *AK, *SK, *BUCKET, *KEY;
static int fails;

struct answer {
	bool done;
	int status;
	char msg[400];
	char text[128];   /* Hello's challenge, Login's user */
};

static void on_answer(void *ud, const struct rpc_result *res)
{
	struct answer *a = ud;
	a->done = true;
	a->status = res->status;
	snprintf(a->msg, sizeof(a->msg), "%s", res->message);
	if (res->status != RPC_OK || !res->resp)
		return;
	if (res->resp->descriptor == &iolake__native__hello_response__descriptor)
		snprintf(a->text, sizeof(a->text), "%s",
			 ((const Iolake__Native__HelloResponse *)res->resp)->challenge);
	else if (res->resp->descriptor == &iolake__native__login_response__descriptor)
		snprintf(a->text, sizeof(a->text), "%s",
			 ((const Iolake__Native__LoginResponse *)res->resp)->user);
}

static struct answer call(struct rpc_channel *ch, unsigned method, const ProtobufCMessage *m)
{
	struct answer a = { 0 };
	struct rpc_call_opts co = { .timeout_ms = 10000 };
	rpc_call(ch, NATIVE_SVC, method, m, NULL, &co, on_answer, &a);
	while (!a.done)
		uv_run(&loop, UV_RUN_ONCE);
	return a;
}

static void check(bool ok, const char *what, const struct answer *a)
{
	printf("%s: %s (%d %s)\n", ok ? "ok" : "FAIL", what, a->status, a->msg);
	fails += !ok;
}

static bool says(const struct answer *a, int status, const char *code)
{
	return a->status == status && !strncmp(a->msg, code, strlen(code));
}

/* Now as amz_date, and secret's signing key for its day. */
static void day_key(const char *secret, char amz_date[17], uint8_t k[32])
{
	sigv4_format_amz_date(time(NULL), amz_date);
	char date[9];
	memcpy(date, amz_date, 8);
	date[8] = 0;
	sigv4_signing_key(secret, date, "us-east-1", "s3", k);
}

/* A Login over challenge, signed with secret (its strings in s). */
struct signed_login {
	Iolake__Native__LoginRequest req;
	Iolake__Native__Auth auth;
	char challenge[64], amz_date[17], sha[80], authz[NATIVE_SIG_AUTHZ_MAX];
};

static void sign_login(struct signed_login *s, const char *challenge, const char *secret)
{
	iolake__native__login_request__init(&s->req);
	iolake__native__auth__init(&s->auth);
	snprintf(s->challenge, sizeof(s->challenge), "%s", challenge);
	s->req.challenge = s->challenge;
	s->req.auth = &s->auth;
	uint8_t k[32];
	day_key(secret, s->amz_date, k);
	snprintf(s->sha, sizeof(s->sha), "%s", SIGV4_UNSIGNED_PAYLOAD);
	if (native_sig_sign(k, AK, "us-east-1", s->amz_date, NATIVE_SVC, NATIVE_M_LOGIN,
			    &s->req.base, s->sha, s->authz)) {
		fprintf(stderr, "cannot sign\n");
		exit(2);
	}
	s->auth.authorization = s->authz;
	s->auth.amz_date = s->amz_date;
	s->auth.content_sha256 = s->sha;
}

/* An unsigned Head of BUCKET/KEY (its Auth empty). */
static struct answer head(struct rpc_channel *ch)
{
	Iolake__Native__Auth auth = IOLAKE__NATIVE__AUTH__INIT;
	Iolake__Native__HeadRequest h = IOLAKE__NATIVE__HEAD_REQUEST__INIT;
	h.auth = &auth;
	h.bucket = (char *)BUCKET;
	h.key = (char *)KEY;
	return call(ch, NATIVE_M_HEAD, &h.base);
}

static struct answer hello(struct rpc_channel *ch)
{
	Iolake__Native__HelloRequest h = IOLAKE__NATIVE__HELLO_REQUEST__INIT;
	return call(ch, NATIVE_M_HELLO, &h.base);
}

static int run_check(struct rpc_channel *a, struct rpc_channel *b)
{
	struct answer r = head(a);
	check(says(&r, RPC_UNAUTHENTICATED, "LoginRequired:"), "an unsigned call with no login", &r);

	struct answer ha = hello(a), hb = hello(b);
	check(ha.status == RPC_OK && strlen(ha.text) == NATIVE_CHALLENGE_LEN, "Hello on A", &ha);
	check(hb.status == RPC_OK && strcmp(ha.text, hb.text), "Hello on B: another challenge", &hb);
	struct signed_login l;
	sign_login(&l, ha.text, SK);
	r = call(b, NATIVE_M_LOGIN, &l.req.base);
	check(says(&r, RPC_UNAUTHENTICATED, "LoginRequired:"), "A's Login replayed on B", &r);
	r = head(b);
	check(says(&r, RPC_UNAUTHENTICATED, "LoginRequired:"), "B is not logged in", &r);

	r = call(a, NATIVE_M_LOGIN, &l.req.base);
	check(r.status == RPC_OK && r.text[0], "A's Login on A", &r);
	r = head(a);
	check(r.status == RPC_OK, "an unsigned Head on A after its login", &r);
	r = call(a, NATIVE_M_LOGIN, &l.req.base);
	check(says(&r, RPC_UNAUTHENTICATED, "LoginRequired:"), "the same Login again on A", &r);
	Iolake__Native__Auth none = IOLAKE__NATIVE__AUTH__INIT;
	Iolake__Native__LoginRequest bare = IOLAKE__NATIVE__LOGIN_REQUEST__INIT;
	bare.auth = &none;
	bare.challenge = ha.text;
	r = call(a, NATIVE_M_LOGIN, &bare.base);
	check(says(&r, RPC_PERMISSION_DENIED, "AccessDenied:"), "an unsigned Login", &r);

	hb = hello(b);
	struct signed_login bad;
	sign_login(&bad, hb.text, "not-the-secret-at-all-0123456789abcdef");
	r = call(b, NATIVE_M_LOGIN, &bad.req.base);
	check(says(&r, RPC_UNAUTHENTICATED, "SignatureDoesNotMatch:"), "a Login with a wrong secret",
	      &r);
	r = head(b);
	check(says(&r, RPC_UNAUTHENTICATED, "LoginRequired:"), "... leaves B logged out", &r);
	return fails ? 1 : 0;
}

static void on_login(void *ud, int status, const char *message, const char *user)
{
	(void)user;
	struct answer *a = ud;
	a->done = true;
	a->status = status;
	snprintf(a->msg, sizeof(a->msg), "%s", message);
}

static int run_hold(struct rpc_channel *ch)
{
	char amz_date[17];
	uint8_t k[32];
	day_key(SK, amz_date, k);
	struct answer l = { 0 };
	if (native_login_start(ch, k, AK, "us-east-1", amz_date, 10000, on_login, &l))
		return 2;
	while (!l.done)
		uv_run(&loop, UV_RUN_ONCE);
	if (l.status != RPC_OK) {
		printf("login failed %d %s\n", l.status, l.msg);
		return 1;
	}
	struct answer r = head(ch);
	printf("ready %d\n", r.status);
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		r = head(ch);
		printf("%d %s\n", r.status, r.msg);
		fflush(stdout);
	}
	return 0;
}

static int run_relogin(const char *ep)
{
	struct iolake_opts o = { .timeout_ms = 10000 };
	iolake_t *c = iolake_open(ep, AK, SK, &o);
	if (!c)
		return 2;
	struct iolake_info info;
	int rc = iolake_head(c, BUCKET, KEY, &info);
	printf("ready %d\n", rc);
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof(line), stdin)) {
		rc = iolake_head(c, BUCKET, KEY, &info);
		printf("%d %s\n", rc, rc ? iolake_errmsg(c) : "");
		fflush(stdout);
	}
	iolake_close(c);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 7 || (strcmp(argv[1], "check") && strcmp(argv[1], "hold") &&
			  strcmp(argv[1], "relogin"))) {
		fprintf(stderr, "usage: native-session check|hold|relogin EP AK SK BUCKET KEY\n");
		return 2;
	}
	AK = argv[3];
	SK = argv[4];
	BUCKET = argv[5];
	KEY = argv[6];
	if (!strcmp(argv[1], "relogin"))
		return run_relogin(argv[2]);
	uv_loop_init(&loop);
	struct rpc_channel_opts co = { 0 };
	struct rpc_channel *a = rpc_channel_open(&loop, argv[2], &co);
	struct rpc_channel *b = rpc_channel_open(&loop, argv[2], &co);
	if (!a || !b) {
		fprintf(stderr, "bad endpoint %s\n", argv[2]);
		return 2;
	}
	int rc = !strcmp(argv[1], "check") ? run_check(a, b) : run_hold(a);
	rpc_channel_close(a);
	rpc_channel_close(b);
	while (uv_run(&loop, UV_RUN_DEFAULT))
		;
	uv_loop_close(&loop);
	return rc;
}
