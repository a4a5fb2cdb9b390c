/*
 * cmd.c — what iolake-admin's command files share (contracts in cmd.h).
 */
#include "admin/cmd.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "admin/call.h"
#include "common/err.h"

_Noreturn void admin_die_unreachable(const struct admin_ctx *x, int err)
{
	const char *last = meta_client_last_error(x->cli);
	if (err != IOL_ETIMEOUT && *last) {
		/* A member answered, and refused: say what it said. */
		fprintf(x->err, "iolake-admin: error: %s\n", last);
		exit(1);
	}
	fprintf(x->err, "iolake-admin: error: no meta leader answered (%s); tried:",
		iol_strerror(err));
	for (size_t i = 0; i < meta_client_member_count(x->cli); i++)
		fprintf(x->err, " %s", meta_client_member(x->cli, i));
	fprintf(x->err, "%s%s\n", *last ? "; last answer: " : "", last);
	exit(1);
}

static _Noreturn void die_start(const struct admin_ctx *x, int rc)
{
	fprintf(x->err, "iolake-admin: error: %s\n", iol_strerror(rc));
	exit(1);
}

ProtobufCMessage *admin_try_call(const struct admin_ctx *x, unsigned method,
				 const ProtobufCMessage *req, int *err)
{
	struct admin_wait w = { 0 };
	*err = admin_run(x->loop, &w, meta_client_call(x->cli, method, req, admin_on_call, &w));
	return w.resp;
}

ProtobufCMessage *admin_must_call(const struct admin_ctx *x, unsigned method,
				  const ProtobufCMessage *req)
{
	struct admin_wait w = { 0 };
	int rc = meta_client_call(x->cli, method, req, admin_on_call, &w);
	if (rc)
		die_start(x, rc);
	rc = admin_run(x->loop, &w, 0);
	if (rc)
		admin_die_unreachable(x, rc);
	return w.resp;
}

/* admin_on_submit keeps only the status; these commands print the
 * result's epoch too, so keep all of it. */
static void on_submit_copy(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct admin_wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err && !(w->resp = meta_client_copy_msg(&res->base)))
		w->err = -ENOMEM;
}

Iolake__Meta__OpResult *admin_must_submit(const struct admin_ctx *x, const Iolake__Meta__Op *op)
{
	struct admin_wait w = { 0 };
	int rc = meta_client_submit(x->cli, op, on_submit_copy, &w);
	if (rc)
		die_start(x, rc);
	rc = admin_run(x->loop, &w, 0);
	if (rc)
		admin_die_unreachable(x, rc);
	return (Iolake__Meta__OpResult *)w.resp;
}

const char *admin_status_name(Iolake__Meta__Status s)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&iolake__meta__status__descriptor, (int)s);
	return v ? v->name + 7 : "UNKNOWN";   /* drop "STATUS_" */
}

int admin_check_result(const struct admin_ctx *x, const char *what,
		       const Iolake__Meta__OpResult *r)
{
	if (r->status == IOLAKE__META__STATUS__STATUS_OK)
		return 0;
	fprintf(x->err, "iolake-admin: error: %s: %s\n", what, admin_status_name(r->status));
	return 1;
}

void admin_jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

const char *admin_human_bytes(uint64_t v, char out[32])
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 5) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, 32, "%" PRIu64 " B", v);
	else
		snprintf(out, 32, "%.1f %s", d, u[i]);
	return out;
}

const char *admin_human_eta(uint64_t s, char out[32])
{
	if (!s)
		snprintf(out, 32, "-");
	else if (s < 60)
		snprintf(out, 32, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(out, 32, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, 32, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(out, 32, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
	return out;
}

const char *admin_human_rate(uint64_t bps, char out[40])
{
	char b[32];
	if (!bps)
		snprintf(out, 40, "-");
	else
		snprintf(out, 40, "%s/s", admin_human_bytes(bps, b));
	return out;
}
