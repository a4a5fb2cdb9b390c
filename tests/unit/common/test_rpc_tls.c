/*
 * test_rpc_tls.c — mutual TLS on RPC (common/rpc_tls.c under
 * common/rpc_h2*.c) with real loopback calls: the Echo server on a
 * loop_thread, the client on the test's loop, certificates made by
 * iolake-admin's CA code (admin/ca.c) in a directory on /dev/shm: two CAs,
 * a server and a client certificate from the first, a node certificate
 * from the second.
 *
 *   - a mutual-TLS call works (small and 1 MiB payloads), and counts a
 *     handshake on both sides;
 *   - refused by the server, counted by reason: a client without a
 *     certificate, one whose certificate is from the other CA, a
 *     plaintext (h2c) client;
 *   - refused by the client: a server whose certificate is from the other
 *     CA;
 *   - a reload from a broken file keeps the identity (calls still work),
 *     a good one takes effect.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin/ca.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "common/rpc_authz.h"
#include "common/rpc_tls.h"
#include "proto/echo.pb-c.h"
#include "common/proto/osd_methods.h"
#include "tests/lib/scratch.h"

#define SVC_ECHO (&iolake__test__echo__descriptor)

static char dir[256];

static void path(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

static void issue_roles(const char *ca, const char *name, const char *prefix, unsigned roles,
			uint32_t node)
{
	char cdir[300], pfx[300], why[256];
	path(cdir, sizeof(cdir), ca);
	path(pfx, sizeof(pfx), prefix);
	static const char *const ips[] = { "127.0.0.1" };
	struct ca_issue_req r = { .name = name, .ips = ips, .n_ips = 1, .days = 1,
				  .roles = roles, .node_id = node };
	ck_assert_msg(ca_issue(cdir, &r, pfx, why, sizeof(why)) == 0, "%s", why);
}

static void issue(const char *ca, const char *name, const char *prefix)
{
	issue_roles(ca, name, prefix, RPC_ROLE_GW, 0);
}

static void make_pki(void)
{
	test_scratch_path(dir, sizeof(dir), "test_rpc_tls.%d", (int)getpid());
	char cdir[300], why[256];
	path(cdir, sizeof(cdir), "ca1");
	ck_assert_msg(ca_init(cdir, 2, why, sizeof(why)) == 0, "%s", why);
	path(cdir, sizeof(cdir), "ca2");
	ck_assert_msg(ca_init(cdir, 2, why, sizeof(why)) == 0, "%s", why);
	issue("ca1", "server", "srv");
	issue("ca1", "client", "cli");
	issue("ca2", "stranger", "other");
	/* The keys are the node's secret: 0600. */
	char k[300];
	struct stat st;
	path(k, sizeof(k), "cli.key");
	ck_assert_int_eq(stat(k, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	path(k, sizeof(k), "ca1/ca.key");
	ck_assert_int_eq(stat(k, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
}

static void rm_pki(void)
{
	char cmd[320];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* An identity: CA file from ca ("ca1"), cert and key by prefix (NULL: none). */
static struct rpc_tls *ident(const char *ca, const char *prefix)
{
	char caf[300], cert[300], key[300], err[512];
	snprintf(caf, sizeof(caf), "%s/%s/ca.pem", dir, ca);
	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, prefix ? prefix : "");
	snprintf(key, sizeof(key), "%s/%s.key", dir, prefix ? prefix : "");
	struct rpc_tls_files f = { caf, prefix ? cert : NULL, prefix ? key : NULL };
	struct rpc_tls *t = NULL;
	ck_assert_msg(rpc_tls_new(&f, &t, err, sizeof(err)) == 0, "%s", err);
	return t;
}

/* ------------------------------------------------------------ server */

static void h_echo(struct rpc_req *r, void *ud)
{
	(void)ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	const struct buf_slice *pl = rpc_req_payload(r);
	resp.text = q->text;
	resp.seq = q->seq;
	resp.payload_len = pl->buf ? pl->len : 0;
	rpc_respond(r, &resp.base, q->echo_payload ? pl : NULL);
}

struct srv {
	struct loop_thread lt;
	struct rpc_server *srv;
	struct rpc_tls *tls;
	int port, rc;
};

static void srv_start(void *arg)
{
	struct srv *s = arg;
	static const rpc_handler_fn handlers[] = { h_echo, NULL, NULL };
	struct rpc_server_opts o = { .tls = s->tls };
	s->srv = rpc_server_new(&s->lt.loop, &o);
	static const rpc_handler_fn osd_none[OSD_M_COUNT] = { 0 };   /* UNIMPLEMENTED */
	s->rc = rpc_server_add_service(s->srv, SVC_ECHO, handlers, s);
	if (!s->rc)
		s->rc = rpc_server_add_service(s->srv, OSD_SVC, osd_none, s);
	if (!s->rc)
		s->rc = rpc_server_listen(s->srv, "127.0.0.1:0");
	s->port = rpc_server_port(s->srv);
}

static void srv_stop(void *arg)
{
	struct srv *s = arg;
	rpc_server_close(s->srv);
}

static void srv_up(struct srv *s, struct rpc_tls *tls)
{
	memset(s, 0, sizeof(*s));
	s->tls = tls;
	ck_assert_int_eq(loop_thread_start(&s->lt, "tls-server"), 0);
	ck_assert_int_eq(loop_thread_call(&s->lt, srv_start, s), 0);
	ck_assert_int_eq(s->rc, 0);
	ck_assert_int_gt(s->port, 0);
}

static void srv_down(struct srv *s)
{
	loop_thread_call(&s->lt, srv_stop, s);
	loop_thread_stop(&s->lt);
}

/* ------------------------------------------------------------ client */

struct result {
	bool done;
	int status;
	char message[256];
	uint64_t payload_len, echoed;
};

static void on_result(void *ud, const struct rpc_result *res)
{
	struct result *r = ud;
	r->done = true;
	r->status = res->status;
	snprintf(r->message, sizeof(r->message), "%s", res->message);
	if (res->status == RPC_OK) {
		const Iolake__Test__EchoResponse *e = (const void *)res->resp;
		r->payload_len = e->payload_len;
		r->echoed = res->payload.buf ? res->payload.len : 0;
	}
}

/* One call of svc's method with q from a fresh channel with identity tls. */
static struct result call_svc(struct rpc_tls *tls, int port,
			      const ProtobufCServiceDescriptor *svc, unsigned method,
			      const ProtobufCMessage *q)
{
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	struct rpc_channel_opts o = { .tls = tls, .connect_timeout_ms = 3000 };
	struct rpc_channel *ch = rpc_channel_open(&loop, target, &o);
	ck_assert_ptr_nonnull(ch);
	struct result r = { 0 };
	struct rpc_call_opts co = { .timeout_ms = 5000 };
	rpc_call(ch, svc, method, q, NULL, &co, on_result, &r);
	while (!r.done)
		uv_run(&loop, UV_RUN_ONCE);
	rpc_channel_close(ch);
	while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	return r;
}

/* One call from a fresh channel with identity tls (NULL: plaintext). */
static struct result call(struct rpc_tls *tls, int port, size_t payload)
{
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	struct rpc_channel_opts o = { .tls = tls, .connect_timeout_ms = 3000 };
	struct rpc_channel *ch = rpc_channel_open(&loop, target, &o);
	ck_assert_ptr_nonnull(ch);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "hello over mTLS";
	q.seq = 7;
	q.echo_payload = payload > 0;
	struct buf *b = NULL;
	struct buf_slice pl = { 0 };
	if (payload) {
		b = buf_new(payload);
		memset(b->data, 0x5a, payload);
		b->len = payload;
		pl = (struct buf_slice){ b, 0, payload };
	}
	struct result r = { 0 };
	struct rpc_call_opts co = { .timeout_ms = 5000 };
	rpc_call(ch, SVC_ECHO, 0, &q.base, payload ? &pl : NULL, &co, on_result, &r);
	buf_unref(b);
	while (!r.done)
		uv_run(&loop, UV_RUN_ONCE);
	rpc_channel_close(ch);
	while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	return r;
}

/* ------------------------------------------------------------ tests */

START_TEST(mutual_ok)
{
	make_pki();
	struct rpc_tls *st = ident("ca1", "srv"), *ct = ident("ca1", "cli");
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	struct srv s;
	srv_up(&s, st);
	struct result r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "status %d: %s", r.status, r.message);
	r = call(ct, s.port, 1 << 20);
	ck_assert_msg(r.status == RPC_OK, "status %d: %s", r.status, r.message);
	ck_assert_uint_eq(r.payload_len, 1 << 20);
	ck_assert_uint_eq(r.echoed, 1 << 20);
	rpc_tls_stats(&b);
	ck_assert_uint_ge(b.client_handshakes - a.client_handshakes, 2);
	ck_assert_uint_ge(b.server_handshakes - a.server_handshakes, 2);
	ck_assert_uint_eq(b.refused_plaintext - a.refused_plaintext, 0);
	ck_assert_uint_eq(b.refused_handshake - a.refused_handshake, 0);
	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	rm_pki();
}
END_TEST

START_TEST(refused_by_server)
{
	make_pki();
	struct rpc_tls *st = ident("ca1", "srv");
	struct rpc_tls *nocert = ident("ca1", NULL), *other = ident("ca1", "other");
	struct srv s;
	srv_up(&s, st);
	struct rpc_tls_stats a, b;

	rpc_tls_stats(&a);
	struct result r = call(nocert, s.port, 0);
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "no cert: status %d: %s", r.status, r.message);
	printf("no client certificate: %s\n", r.message);
	fflush(stdout);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.refused_handshake - a.refused_handshake, 1);

	/* A refused peer's circuit is open (shared per address): a new
	 * server, a new port, for each case. */
	srv_down(&s);
	srv_up(&s, st);
	rpc_tls_stats(&a);
	r = call(other, s.port, 0);
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "other CA: status %d: %s", r.status, r.message);
	printf("client certificate from another CA: %s\n", r.message);
	fflush(stdout);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.refused_handshake - a.refused_handshake, 1);

	srv_down(&s);
	srv_up(&s, st);
	rpc_tls_stats(&a);
	r = call(NULL, s.port, 0); /* no default identity in this process: h2c */
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "plain: status %d: %s", r.status, r.message);
	printf("plaintext client: %s\n", r.message);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.refused_plaintext - a.refused_plaintext, 1);
	ck_assert_uint_eq(b.server_handshakes - a.server_handshakes, 0);

	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(nocert);
	rpc_tls_free(other);
	rm_pki();
}
END_TEST

START_TEST(refused_by_client)
{
	make_pki();
	/* The server trusts ca1 but shows a certificate from ca2. */
	struct rpc_tls *st = ident("ca1", "other"), *ct = ident("ca1", "cli");
	struct srv s;
	srv_up(&s, st);
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	struct result r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "status %d: %s", r.status, r.message);
	ck_assert_msg(strstr(r.message, "TLS") != NULL, "%s", r.message);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.client_failures - a.client_failures, 1);
	ck_assert_uint_eq(b.client_handshakes - a.client_handshakes, 0);
	printf("server certificate from another CA: %s\n", r.message);
	/* And a plaintext server: the TLS client fails too. */
	srv_down(&s);
	srv_up(&s, NULL);
	rpc_tls_stats(&a);
	r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "status %d: %s", r.status, r.message);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.client_failures - a.client_failures, 1);
	printf("plaintext server: %s\n", r.message);
	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	rm_pki();
}
END_TEST

START_TEST(reload)
{
	make_pki();
	struct rpc_tls *st = ident("ca1", "srv"), *ct = ident("ca1", "cli");
	struct srv s;
	srv_up(&s, st);
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	/* A half-written certificate: the reload fails, the old one stays. */
	char p[300], err[512];
	path(p, sizeof(p), "srv.pem");
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("-----BEGIN CERTIFICATE-----\nMIIB\n", f);
	fclose(f);
	ck_assert_int_eq(rpc_tls_reload(st, err, sizeof(err)), -EINVAL);
	printf("broken reload: %s\n", err);
	struct result r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "status %d: %s", r.status, r.message);
	/* A new certificate from the same CA: taken. */
	issue("ca1", "server2", "srv");
	ck_assert_msg(rpc_tls_reload(st, err, sizeof(err)) == 0, "%s", err);
	r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "status %d: %s", r.status, r.message);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.reload_failures - a.reload_failures, 1);
	ck_assert_uint_eq(b.reloads - a.reloads, 1);
	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	rm_pki();
}
END_TEST

START_TEST(ca_checks)
{
	char why[256];
	static const char *const bad_ip[] = { "1.2.3" };
	static const char *const bad_dns[] = { "a..b" };
	static const char *const ok_dns[] = { "*.node.example", "meta-1" };
	struct ca_issue_req r = { .name = "n", .days = 1 };
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);   /* no role */
	r.roles = RPC_ROLE_OSD;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);   /* osd needs a node id */
	r.node_id = 7;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), 0);
	r.ips = bad_ip, r.n_ips = 1;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);
	r.n_ips = 0, r.dns = bad_dns, r.n_dns = 1;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);
	r.dns = ok_dns, r.n_dns = 2;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), 0);
	r.name = "a/b";
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);
	r.name = "n", r.days = 0;
	ck_assert_int_eq(ca_check_req(&r, why, sizeof(why)), -EINVAL);
	/* A second ca init on the same dir refuses. */
	test_scratch_path(dir, sizeof(dir), "test_rpc_tls.%d", (int)getpid());
	char cdir[300];
	path(cdir, sizeof(cdir), "ca1");
	ck_assert_int_eq(ca_init(cdir, 1, why, sizeof(why)), 0);
	ck_assert_int_eq(ca_init(cdir, 1, why, sizeof(why)), -EEXIST);
	rm_pki();
}
END_TEST

/* A certificate from ca1 without any iolake role (as issued before roles),
 * made with the openssl tool: legacy.pem / legacy.key. */
static void issue_legacy(void)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && openssl ecparam -name prime256v1 -genkey -noout -out legacy.key 2>/dev/null"
		 " && openssl req -new -key legacy.key -subj /O=IOLake/CN=legacy -out legacy.csr"
		 " 2>/dev/null && printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,"
		 "clientAuth\\n' > legacy.ext && openssl x509 -req -in legacy.csr -CA ca1/ca.pem"
		 " -CAkey ca1/ca.key -CAcreateserial -days 1 -sha256 -extfile legacy.ext"
		 " -out legacy.pem 2>/dev/null", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct rpc_tls *ident_opts(const char *prefix, const char *crl, bool legacy)
{
	char caf[300], cert[300], key[300], crlf[300], err[512];
	snprintf(caf, sizeof(caf), "%s/ca1/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, prefix);
	snprintf(key, sizeof(key), "%s/%s.key", dir, prefix);
	snprintf(crlf, sizeof(crlf), "%s/%s", dir, crl ? crl : "");
	struct rpc_tls_files f = { caf, cert, key, crl ? crlf : NULL, legacy };
	struct rpc_tls *t = NULL;
	ck_assert_msg(rpc_tls_new(&f, &t, err, sizeof(err)) == 0, "%s", err);
	return t;
}

/* A peer certificate without a role is refused (counted as a role
 * refusal), unless the server runs with --rpc-tls-legacy-any-role. */
START_TEST(legacy_role)
{
	make_pki();
	issue_legacy();
	struct rpc_tls *strict = ident_opts("srv", NULL, false), *lax = ident_opts("srv", NULL, true);
	struct rpc_tls *old = ident_opts("legacy", NULL, false);
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	struct srv s;
	srv_up(&s, strict);
	struct result r = call(old, s.port, 0);
	ck_assert_msg(r.status != RPC_OK, "a role-less certificate was served");
	srv_down(&s);
	rpc_tls_stats(&b);
	ck_assert_uint_ge(b.refused_role - a.refused_role, 1);
	usleep(300 * 1000);   /* the refusal opened the target's circuit */
	srv_up(&s, lax);
	r = call(old, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "legacy-any-role: status %d: %s", r.status, r.message);
	srv_down(&s);
	rpc_tls_free(strict);
	rpc_tls_free(lax);
	rpc_tls_free(old);
	rm_pki();
}
END_TEST

/* The PKI, a CRL valid days (0: nextUpdate now, passed when this
 * returns), the server's identity with it, clients cli and cli2. */
static void crl_pki(unsigned days, char *cdir, size_t cap, struct rpc_tls **st,
		    struct rpc_tls **ct, struct rpc_tls **ct2)
{
	char why[256];
	make_pki();
	path(cdir, cap, "ca1");
	ck_assert_msg(ca_crl(cdir, NULL, days, why, sizeof(why)) == 0, "%s", why);
	issue("ca1", "other-client", "cli2");
	if (!days)
		usleep(1500 * 1000);
	*st = ident_opts("srv", "ca1/crl.pem", false);
	*ct = ident("ca1", "cli");
	*ct2 = ident("ca1", "cli2");
}

/* ca revoke + --rpc-tls-crl: a revoked client is refused at the handshake
 * once the server reloads the CRL; others still pass. */
START_TEST(revoked)
{
	char cdir[300], certf[300], why[256];
	struct rpc_tls *st, *ct, *ct2;
	crl_pki(1, cdir, sizeof(cdir), &st, &ct, &ct2);
	struct srv s;
	srv_up(&s, st);
	struct result r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "before: %d %s", r.status, r.message);
	path(certf, sizeof(certf), "cli.pem");
	ck_assert_msg(ca_revoke(cdir, certf, 1, why, sizeof(why)) == 0, "%s", why);
	/* A certificate from another CA cannot be revoked here. */
	path(certf, sizeof(certf), "other.pem");
	ck_assert_int_eq(ca_revoke(cdir, certf, 1, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(rpc_tls_reload(st, why, sizeof(why)), 0);
	r = call(ct, s.port, 0);
	ck_assert_msg(r.status != RPC_OK, "a revoked certificate was served");
	/* The refusal opened that target's circuit: a fresh port for the
	 * certificate that is not revoked. */
	srv_down(&s);
	srv_up(&s, st);
	r = call(ct2, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "not revoked: %d %s", r.status, r.message);
	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	rpc_tls_free(ct2);
	rm_pki();
}
END_TEST

/* Issue 16: a client refuses a server whose certificate, valid and from
 * the cluster CA, lacks the role serving the service it calls: an OSD
 * call to a gateway's certificate fails UNAVAILABLE naming both roles and
 * is counted; the same call to an OSD's certificate reaches the server. */
START_TEST(server_role_refused)
{
	make_pki();
	issue_roles("ca1", "osd3", "osd3", RPC_ROLE_OSD, 3);
	struct rpc_tls *impostor = ident("ca1", "srv"), *osd = ident("ca1", "osd3");
	struct rpc_tls *ct = ident("ca1", "cli");
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	struct srv s;
	srv_up(&s, impostor);
	struct result r = call_svc(ct, s.port, OSD_SVC, OSD_M_STATUS, &q.base);
	ck_assert_msg(r.status == RPC_UNAVAILABLE, "status %d: %s", r.status, r.message);
	ck_assert_msg(strstr(r.message, "holds roles gw") &&
		      strstr(r.message, "iolake.osd.Osd is served by osd"), "%s", r.message);
	printf("an OSD call to a gateway's certificate: %s\n", r.message);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.server_role_refused - a.server_role_refused, 1);
	/* The test service is served by any role: the same server answers it. */
	srv_down(&s);
	srv_up(&s, impostor);
	r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "echo: %d %s", r.status, r.message);
	srv_down(&s);
	srv_up(&s, osd);
	r = call_svc(ct, s.port, OSD_SVC, OSD_M_STATUS, &q.base);
	ck_assert_msg(r.status == RPC_UNIMPLEMENTED, "osd: %d %s", r.status, r.message);
	srv_down(&s);
	rpc_tls_free(impostor);
	rpc_tls_free(osd);
	rpc_tls_free(ct);
	rm_pki();
}
END_TEST

/* A role-less server certificate is refused by a client too (unless the
 * client runs with --rpc-tls-legacy-any-role). */
START_TEST(server_without_role)
{
	make_pki();
	issue_legacy();
	struct rpc_tls *old = ident_opts("legacy", NULL, true);   /* the server accepts us */
	struct rpc_tls *strict = ident_opts("cli", NULL, false), *lax = ident_opts("cli", NULL, true);
	struct srv s;
	srv_up(&s, old);
	struct result r = call(strict, s.port, 0);
	ck_assert_msg(r.status == RPC_UNAVAILABLE && strstr(r.message, "no iolake role"), "%d %s",
		      r.status, r.message);
	srv_down(&s);
	srv_up(&s, old);
	r = call(lax, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "legacy client: %d %s", r.status, r.message);
	srv_down(&s);
	rpc_tls_free(old);
	rpc_tls_free(strict);
	rpc_tls_free(lax);
	rm_pki();
}
END_TEST

/* Issue 16: a CRL past its nextUpdate is fail-open (handshakes go on) and
 * reported; its revocations still apply; a new CRL file is read without a
 * SIGHUP (rpc_tls_crl_poll, as a new connection or a scrape runs it). */
START_TEST(crl_stale_and_watched)
{
	char cdir[300], certf[300], why[256];
	struct rpc_tls *st, *ct, *ct2;
	crl_pki(0, cdir, sizeof(cdir), &st, &ct, &ct2);   /* stale from the start */
	ck_assert_int_eq(rpc_tls_crl_poll(st, true), 1);
	ck_assert_int_eq(rpc_tls_crl_expired(st), 1);
	ck_assert_int_lt(rpc_tls_crl_next_update(st), (int64_t)time(NULL));
	ck_assert_int_gt(rpc_tls_crl_next_update(st), 0);
	struct srv s;
	srv_up(&s, st);
	struct result r = call(ct, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "stale CRL, fail-open: %d %s", r.status, r.message);
	/* Revoke cli (the new CRL is stale too): no reload, no SIGHUP; the
	 * poll sees the file changed. */
	path(certf, sizeof(certf), "cli.pem");
	ck_assert_msg(ca_revoke(cdir, certf, 0, why, sizeof(why)) == 0, "%s", why);
	struct rpc_tls_stats a, b;
	rpc_tls_stats(&a);
	usleep(1100 * 1000);   /* its nextUpdate (now) passes */
	ck_assert_int_eq(rpc_tls_crl_poll(st, true), 1);
	rpc_tls_stats(&b);
	ck_assert_uint_eq(b.reloads - a.reloads, 1);
	srv_down(&s);
	srv_up(&s, st);
	r = call(ct, s.port, 0);
	ck_assert_msg(r.status != RPC_OK, "revoked by a stale CRL, yet served");
	srv_down(&s);
	srv_up(&s, st);
	r = call(ct2, s.port, 0);
	ck_assert_msg(r.status == RPC_OK, "not revoked: %d %s", r.status, r.message);
	/* A fresh CRL: not expired any more. */
	ck_assert_msg(ca_crl(cdir, NULL, 30, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(rpc_tls_crl_poll(st, true), 0);
	ck_assert_int_gt(rpc_tls_crl_next_update(st), (int64_t)time(NULL) + 29 * 86400);
	srv_down(&s);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	rpc_tls_free(ct2);
	rm_pki();
}
END_TEST

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	Suite *s = suite_create("rpc_tls");
	TCase *tc = tcase_create("rpc_tls");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mutual_ok);
	tcase_add_test(tc, refused_by_server);
	tcase_add_test(tc, refused_by_client);
	tcase_add_test(tc, reload);
	tcase_add_test(tc, ca_checks);
	tcase_add_test(tc, legacy_role);
	tcase_add_test(tc, revoked);
	tcase_add_test(tc, server_role_refused);
	tcase_add_test(tc, server_without_role);
	tcase_add_test(tc, crl_stale_and_watched);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
