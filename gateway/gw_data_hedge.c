/*
 * gw_data_hedge.c — the gw_data's deadline queue (d->hq and its one
 * timer) and the shard-read hedge delay.
 *
 * Owns: d->hq (nodes in at_ms order), d->hedge (the timer, armed for the
 * head) and the delay figures read from the latency histograms. A node is
 * a GET segment waiting for its hedge time (gw_data_get.c) or a PUT
 * segment past its write quorum waiting out its straggler grace
 * (gw_data_put.c); when its time comes, its fire() runs. What a hedge or
 * a grace then does is its owner's, not this module's.
 *
 * Loop: the gw_data's.
 */
#include "gateway/gw_data.h"
#include "gateway/gw_data_int.h"

uint32_t gwd_hedge_delay_ms(const struct gw_data *d)
{
	uint32_t ms = (gw_lat_get(&d->lat) + 999) / 1000;
	return ms < d->o.hedge_min_ms ? d->o.hedge_min_ms
	       : ms > d->o.hedge_max_ms ? d->o.hedge_max_ms : ms;
}

uint32_t gw_data_osd_read_p95_us(const struct gw_data *d, uint32_t osd_id)
{
	const struct gw_lat *l = gwd_osd_lat_peek(&d->olat, osd_id);
	return l ? gw_lat_get(l) : 0;
}

static void hedge_unqueue(struct gw_data *d, struct gwd_hnode *h)
{
	if (!h->queued)
		return;
	if (h->prev)
		h->prev->next = h->next;
	else
		d->hq_head = h->next;
	if (h->next)
		h->next->prev = h->prev;
	else
		d->hq_tail = h->prev;
	h->prev = h->next = NULL;
	h->queued = false;
}

static void hedge_timer_arm(struct gw_data *d)
{
	if (!d->hq_head) {
		if (d->hedge_armed_ms)
			uv_timer_stop(&d->hedge);
		d->hedge_armed_ms = 0;
		return;
	}
	uint64_t at = d->hq_head->at_ms;
	if (d->hedge_armed_ms && d->hedge_armed_ms <= at)
		return; /* fires no later than needed; re-arms then */
	uv_update_time(d->loop);
	uint64_t now = uv_now(d->loop);
	uv_timer_start(&d->hedge, gwd_hedge_fire, at > now ? at - now : 0, 0);
	d->hedge_armed_ms = at;
}

void gwd_hq_add(struct gw_data *d, struct gwd_hnode *h, uint64_t at_ms)
{
	hedge_unqueue(d, h);
	h->at_ms = at_ms;
	struct gwd_hnode *after = d->hq_tail;
	while (after && after->at_ms > at_ms)
		after = after->prev;
	h->prev = after;
	h->next = after ? after->next : d->hq_head;
	if (h->next)
		h->next->prev = h;
	else
		d->hq_tail = h;
	if (after)
		after->next = h;
	else
		d->hq_head = h;
	h->queued = true;
	hedge_timer_arm(d);
}

void gwd_hq_del(struct gw_data *d, struct gwd_hnode *h)
{
	hedge_unqueue(d, h);
}

void gwd_hedge_fire(uv_timer_t *t)
{
	struct gw_data *d = t->data;
	uint64_t now = loop_now_ms();
	d->hedge_armed_ms = 0;
	while (d->hq_head && d->hq_head->at_ms <= now) {
		struct gwd_hnode *h = d->hq_head;
		hedge_unqueue(d, h);
		h->fire(h);
	}
	hedge_timer_arm(d);
}
