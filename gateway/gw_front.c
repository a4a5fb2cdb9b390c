/*
 * gw_front.c — flags, set-up and reload of the S3 port's TLS and
 * pre-authentication limits (gw_front.h). Runs at start on the main
 * thread; gw_front_reload on whichever thread handles SIGHUP.
 */
#include "gateway/gw_front.h"

#include <errno.h>
#include <stdio.h>

#include "common/log.h"
#include "common/tls.h"

int gw_front_setup(struct gw_front *f, char *err, size_t err_len)
{
	if (!f->tls_cert != !f->tls_key) {
		snprintf(err, err_len, "--tls-cert and --tls-key go together");
		return -EINVAL;
	}
	if (f->tls_cert) {
		int rc = tls_server_new(f->tls_cert, f->tls_key, &f->tls, err, err_len);
		if (rc)
			return rc;
		char serial[80];
		tls_server_serial(f->tls, serial, sizeof(serial));
		LOG_INFO("tls: certificate loaded", "cert=%s serial=%s", f->tls_cert, serial);
	}
	return 0;
}

void gw_front_apply(const struct gw_front *f, struct http_server_cfg *http)
{
	http->tls = f->tls;
	http->limit.max_conns = (uint32_t)f->max_conns_per_addr;
	http->limit.rate = (uint32_t)f->rate_per_addr;
	http->limit.burst = (uint32_t)f->rate_burst;
	http->min_body_rate_bps = (uint32_t)f->min_body_rate;
}

void gw_front_apply_users(const struct gw_front *f, struct user_limit_cfg *out)
{
	*out = (struct user_limit_cfg){ .rate = (uint32_t)f->rate_per_user,
					.bytes_rate = f->bytes_per_user };
}

void gw_front_reload(struct gw_front *f)
{
	if (!f->tls)
		return;
	char err[512];
	if (tls_server_reload(f->tls, f->tls_cert, f->tls_key, err, sizeof(err))) {
		LOG_ERROR("tls: reload failed; the old certificate stays", "err=%s", LOG_Q(err));
		return;
	}
	char serial[80];
	tls_server_serial(f->tls, serial, sizeof(serial));
	LOG_INFO("tls: certificate reloaded", "cert=%s serial=%s", f->tls_cert, serial);
}

const char *gw_front_scheme(const struct gw_front *f)
{
	return f->tls ? "https" : "http";
}

void gw_front_free(struct gw_front *f)
{
	tls_server_free(f->tls);
	f->tls = NULL;
}
