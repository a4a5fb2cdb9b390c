/*
 * admin_api_stats.c — GET /api/v1/stats: this gateway's S3 request
 * counters and latency per operation (gateway/gw_stats.h), for the
 * console's live rate and latency charts (it polls every 2 s and charts
 * the differences). Nothing asked of meta: the figures are the process's
 * own, since it started.
 */
#include "gateway/admin_api_int.h"
#include "gateway/gw_stats.h"

void admin_h_stats(struct admin_call *c)
{
	struct gw_stats *st = c->api->stats;
	if (!st) {
		admin_reply_error(c, 503, "ServiceUnavailable",
				  "this process serves no S3 requests, or keeps no statistics");
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	gw_stats_json(st, &w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}
