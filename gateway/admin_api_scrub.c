/*
 * admin_api_scrub.c — GET /api/v1/scrub (issue 20): each OSD's scrubbing,
 * from the Status the OSD answers (asked as GET /api/v1/osds asks it,
 * admin_api_osds.c):
 *   - the background scrubber (osd/store/scrub.h): every shard's bytes
 *     read and checked against their checksum, paced by --scrub-rate:
 *     running (a pass under way) or idle, passes, the last pass's end,
 *     shards and bytes checked, bad shards found;
 *   - deep scrub by the recovery driver (osd/recover.h): every stripe of
 *     the PGs the OSD is the primary of, all k+m shards compared, every
 *     --deep-scrub-interval: PGs done, the last one's end, stripes and
 *     bytes compared, shards repaired, stripes left inconsistent.
 * Counters are since the OSD started, except passes and the last pass's
 * end (kept in its index). An OSD that does not answer has "scrub": null.
 */
#include "gateway/admin_api_int.h"

static void null_or_u64(struct jsonw *w, const char *k, uint64_t v)
{
	jsonw_key(w, k);
	v ? jsonw_u64(w, v) : jsonw_null(w);
}

void admin_scrub_reply(struct admin_call *c, const Iolake__Meta__ClusterMap *m,
		       const Iolake__Osd__StatusResponse *const *st, const int *rpc_status,
		       size_t n)
{
	uint64_t tot_shards = 0, tot_bytes = 0, tot_errors = 0, tot_repaired = 0, running = 0;
	uint64_t tot_inconsistent = 0;
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "epoch", m->epoch);
	jsonw_key(&w, "osds");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__OsdInfo *o = m->osds[i];
		const Iolake__Osd__StatusResponse *s = st[i];
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "id", o->id);
		jsonw_kstr(&w, "host", o->host);
		jsonw_kbool(&w, "up", o->up);
		jsonw_key(&w, "scrub");
		if (!s) {
			jsonw_null(&w);
			jsonw_kstr(&w, "scrub_error", rpc_status_name(rpc_status[i]));
			jsonw_obj_end(&w);
			continue;
		}
		bool on = s->scrub_rate != 0;
		jsonw_obj_begin(&w);
		jsonw_kbool(&w, "enabled", on);
		jsonw_kbool(&w, "running", on && !s->scrub_idle);
		jsonw_ku64(&w, "rate_bytes_per_s", s->scrub_rate);
		jsonw_ku64(&w, "passes", s->scrub_passes);
		null_or_u64(&w, "last_pass_end_ms", s->scrub_last_pass_unix_s * 1000);
		jsonw_ku64(&w, "shards_checked", s->scrub_shards);
		jsonw_ku64(&w, "bytes_checked", s->scrub_bytes);
		jsonw_ku64(&w, "errors_found", s->scrub_errors);
		jsonw_ku64(&w, "checksum_errors_on_read", s->checksum_errors);
		jsonw_ku64(&w, "position_pg", s->scrub_position_pg);
		jsonw_obj_end(&w);
		jsonw_key(&w, "deep_scrub");
		jsonw_obj_begin(&w);
		jsonw_kbool(&w, "enabled", s->recovery_on && s->deep_scrub_interval_ms);
		jsonw_ku64(&w, "interval_ms", s->deep_scrub_interval_ms);
		jsonw_ku64(&w, "pgs_primary", s->recovery_pgs_primary);
		jsonw_ku64(&w, "pgs_active", s->recovery_pgs_active);
		jsonw_ku64(&w, "pgs_done", s->deep_pgs);
		null_or_u64(&w, "last_pg_end_ms", s->deep_last_unix_ms);
		jsonw_ku64(&w, "stripes_checked", s->deep_stripes);
		jsonw_ku64(&w, "bytes_checked", s->deep_bytes);
		jsonw_ku64(&w, "shards_repaired", s->deep_repaired);
		jsonw_ku64(&w, "stripes_inconsistent", s->deep_inconsistent);
		jsonw_obj_end(&w);
		jsonw_obj_end(&w);
		tot_shards += s->scrub_shards;
		tot_bytes += s->scrub_bytes + s->deep_bytes;
		tot_errors += s->scrub_errors;
		tot_repaired += s->deep_repaired;
		tot_inconsistent += s->deep_inconsistent;
		running += on && !s->scrub_idle;
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "summary");
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "osds_scrubbing", running);
	jsonw_ku64(&w, "shards_checked", tot_shards);
	jsonw_ku64(&w, "bytes_checked", tot_bytes);
	jsonw_ku64(&w, "errors_found", tot_errors);
	jsonw_ku64(&w, "shards_repaired", tot_repaired);
	jsonw_ku64(&w, "stripes_inconsistent", tot_inconsistent);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}
