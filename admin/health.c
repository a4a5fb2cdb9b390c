/*
 * health.c — `iolake-admin cluster wait-healthy` (contract in health.h).
 *
 * Each round asks every member its Status (answering, leader), the map
 * (OSDs up and in) and the leader's PgStats (states, stripes missing),
 * one call after another through admin/call.h. Owns nothing past a
 * round; a round's verdict is one line of text.
 */
#include "admin/health.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "admin/call.h"
#include "common/loop.h"
#include "meta/client.h"
#include "proto/meta.pb-c.h"
#include "common/proto/meta_methods.h"

/* One round: true when healthy; why (cap bytes) says what is not, or
 * sums up what is. */
static bool round_healthy(struct meta_client *c, char *why, size_t cap)
{
	size_t n = meta_client_member_count(c), answered = 0, leader = n;
	Iolake__Meta__StatusRequest sq = IOLAKE__META__STATUS_REQUEST__INIT;
	for (size_t i = 0; i < n; i++) {
		ProtobufCMessage *m;
		if (admin_call_member(c, i, META_M_STATUS, &sq.base, &m) == 0 && m) {
			answered++;
			if (!strcmp(((Iolake__Meta__StatusResponse *)m)->role, "leader"))
				leader = i;
		}
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
	}
	if (answered < n || leader == n) {
		snprintf(why, cap, "meta: %zu of %zu members answer, %s", answered, n,
			 leader == n ? "no leader" : "a leader");
		return false;
	}

	Iolake__Meta__GetMapRequest mq = IOLAKE__META__GET_MAP_REQUEST__INIT;
	ProtobufCMessage *m;
	if (admin_call(c, META_M_GET_MAP, &mq.base, &m) || !m) {
		snprintf(why, cap, "meta: the map cannot be read");
		return false;
	}
	const Iolake__Meta__GetMapResponse *mr = (const void *)m;
	size_t osds = 0, not_up = 0, not_in = 0;
	uint32_t first_bad = 0;
	if (mr->map)
		for (size_t i = 0; i < mr->map->n_osds; i++) {
			const Iolake__Meta__OsdInfo *o = mr->map->osds[i];
			osds++;
			if (!o->up || !o->in) {
				not_up += !o->up;
				not_in += !o->in;
				if (!first_bad)
					first_bad = o->id;
			}
		}
	protobuf_c_message_free_unpacked(m, NULL);
	if (!osds || not_up || not_in) {
		snprintf(why, cap, "osds: %zu in the map, %zu not up, %zu not in (first: osd %u)",
			 osds, not_up, not_in, first_bad);
		return false;
	}

	Iolake__Meta__PgStatsRequest pq = IOLAKE__META__PG_STATS_REQUEST__INIT;
	if (admin_call_member(c, leader, META_M_PG_STATS, &pq.base, &m) || !m) {
		snprintf(why, cap, "pgs: the leader's PG states cannot be read");
		return false;
	}
	const Iolake__Meta__PgStatsResponse *ps = (const void *)m;
	uint32_t clean = 0, other = 0;
	const char *other_state = "";
	for (size_t i = 0; ps->status == IOLAKE__META__STATUS__STATUS_OK && i < ps->n_counts; i++) {
		if (!strcmp(ps->counts[i]->state, "active+clean")) {
			clean += ps->counts[i]->pgs;
		} else if (ps->counts[i]->pgs) {
			other += ps->counts[i]->pgs;
			other_state = ps->counts[i]->state;
		}
	}
	bool ok = ps->status == IOLAKE__META__STATUS__STATUS_OK && clean && !other &&
		  !ps->stripes_missing;
	if (ok)
		snprintf(why, cap, "%zu meta members, %zu OSDs up and in, %u PGs active+clean", n,
			 osds, clean);
	else
		snprintf(why, cap, "pgs: %u active+clean, %u not (e.g. %s), %" PRIu64
			 " stripes left to rebuild", clean, other, other_state, ps->stripes_missing);
	protobuf_c_message_free_unpacked(m, NULL);
	return ok;
}

int admin_wait_healthy(struct meta_client *c, uint64_t timeout_ms, FILE *out, FILE *err)
{
	uint64_t t0 = loop_now_ms(), said = t0;
	char why[200];
	for (;;) {
		bool ok = round_healthy(c, why, sizeof(why));
		uint64_t now = loop_now_ms();
		if (ok) {
			fprintf(out, "healthy after %.1f s: %s\n", (double)(now - t0) / 1000, why);
			return 0;
		}
		if (now - t0 >= timeout_ms) {
			fprintf(err, "iolake-admin: not healthy after %.1f s: %s\n",
				(double)(now - t0) / 1000, why);
			return 1;
		}
		if (now - said >= 10000) {
			fprintf(out, "waiting (%.0f s): %s\n", (double)(now - t0) / 1000, why);
			fflush(out);
			said = now;
		}
		usleep(1000 * 1000);
	}
}
