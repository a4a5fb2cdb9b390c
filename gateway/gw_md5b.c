/*
 * gw_md5b.c — a loop's one-shot MD5 digests hashed together at the end of
 * its turn (contract in gw_md5b.h).
 *
 * Owns: the queue (a fixed array of item pointers, a cancelled item's slot
 * NULL), one MD5 context per slot, the check and idle handles. Invariant:
 * the handles are active exactly while n > 0; an item's b is set exactly
 * while its slot holds it.
 *
 * Thread: its loop's.
 */
#include "gateway/gw_md5b.h"

#include <stdlib.h>

#include "common/md5_mb.h"

struct gw_md5b {
	uv_check_t check;             /* the flush, after the turn's I/O */
	uv_idle_t idle;               /* active while queued: the poll does not block */
	struct gw_md5b_item *slots[GW_MD5B_SLOTS];
	struct md5_mb_ctx ctx[GW_MD5B_SLOTS];
	unsigned n;                   /* slots used this turn */
	bool flushing;                /* done callbacks running: queue refuses */
	bool closing;
	unsigned open_handles;
	uint64_t turns, items;
};

static void on_idle(uv_idle_t *h)
{
	(void)h;   /* its being active is its job */
}

static void flush(uv_check_t *h)
{
	struct gw_md5b *b = h->data;
	struct md5_mb_ctx *x[GW_MD5B_SLOTS];
	const uint8_t *data[GW_MD5B_SLOTS];
	size_t len[GW_MD5B_SLOTS];
	unsigned k = 0;
	for (unsigned i = 0; i < b->n; i++) {
		struct gw_md5b_item *it = b->slots[i];
		if (!it)
			continue;
		md5_mb_init(&b->ctx[i]);
		x[k] = &b->ctx[i];
		data[k] = it->data;
		len[k++] = it->len;
	}
	md5_mb_update_n(x, data, len, k);
	b->turns += k > 0;
	b->items += k;
	b->flushing = true;
	for (unsigned i = 0; i < b->n; i++) {
		struct gw_md5b_item *it = b->slots[i];
		if (!it)   /* cancelled, maybe by an earlier item's done */
			continue;
		md5_mb_final(&b->ctx[i], it->digest);
		b->slots[i] = NULL;
		it->b = NULL;
		it->done(it);
	}
	b->flushing = false;
	if (b->closing)
		return;
	b->n = 0;
	uv_check_stop(&b->check);
	uv_idle_stop(&b->idle);
}

struct gw_md5b *gw_md5b_new(uv_loop_t *loop)
{
	struct gw_md5b *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	uv_check_init(loop, &b->check);
	uv_idle_init(loop, &b->idle);
	b->check.data = b->idle.data = b;
	b->open_handles = 2;
	return b;
}

static void on_closed(uv_handle_t *h)
{
	struct gw_md5b *b = h->data;
	if (--b->open_handles == 0)
		free(b);
}

void gw_md5b_close(struct gw_md5b *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->n; i++)
		if (b->slots[i]) {
			b->slots[i]->b = NULL;
			b->slots[i] = NULL;
		}
	b->closing = true;
	uv_close((uv_handle_t *)&b->check, on_closed);
	uv_close((uv_handle_t *)&b->idle, on_closed);
}

bool gw_md5b_queue(struct gw_md5b *b, struct gw_md5b_item *it)
{
	if (!b || b->flushing || b->closing || b->n == GW_MD5B_SLOTS)
		return false;
	if (b->n == 0) {
		uv_check_start(&b->check, flush);
		uv_idle_start(&b->idle, on_idle);
	}
	it->b = b;
	it->slot = b->n;
	b->slots[b->n++] = it;
	return true;
}

void gw_md5b_cancel(struct gw_md5b_item *it)
{
	if (!it->b)
		return;
	it->b->slots[it->slot] = NULL;
	it->b = NULL;
}

void gw_md5b_counts(const struct gw_md5b *b, uint64_t *turns, uint64_t *items)
{
	*turns = b ? b->turns : 0;
	*items = b ? b->items : 0;
}
