/*
 * gw_bread.c — GetBucket reads shared per gateway loop (contract and why
 * an answer is as fresh as a read of the asker's own in gw_bread.h).
 *
 * Owns the slots and one context per GetBucket out; the waiters are the
 * askers'. Decides nothing about the answer: each asker gets it as the
 * meta client gave it.
 *
 * Thread: one loop's; no locking.
 */
#include "gateway/gw_bread.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/proto/meta_methods.h"
#include "proto/meta.pb-c.h"

#define NAME_MAX_BYTES 64   /* S3 bucket names are at most 63 bytes */

struct slot {
	char name[NAME_MAX_BYTES];
	bool out;                       /* a GetBucket of name is out */
	struct gw_bread_waiter *waiting; /* asked since it went out: the next one's */
	struct gw_bread_waiter **tail;
};

struct gw_bread {
	struct meta_client *mc;
	struct slot *slots;
	size_t mask;
	unsigned calls_out;
	bool closing;
	struct metrics_counter *m_calls, *m_shared;
};

/* One GetBucket out: the askers it answers. */
struct call {
	struct gw_bread *b;
	struct slot *s;                 /* NULL: a call of its own (slot taken) */
	struct gw_bread_waiter *list;
};

static void count(struct metrics_counter *m, uint64_t n)
{
	if (m && n)
		metrics_counter_add(m, n);
}

struct gw_bread *gw_bread_new(struct meta_client *mc, size_t slots, struct metrics_registry *reg)
{
	if (!slots || (slots & (slots - 1)))
		return NULL;
	struct gw_bread *b = calloc(1, sizeof(*b));
	if (!b || !(b->slots = calloc(slots, sizeof(*b->slots)))) {
		free(b);
		return NULL;
	}
	b->mc = mc;
	b->mask = slots - 1;
	if (reg) {
		/* Registered once per registry: a second loop's counts into
		 * the first's (EEXIST: find them). */
		static const char *const names[2][2] = {
			{ "iolake_gw_bucket_reads_total",
			  "GetBucket calls the S3 layer sent to meta" },
			{ "iolake_gw_bucket_reads_shared_total",
			  "bucket reads answered by a GetBucket another request's read sent "
			  "(sent after they asked)" },
		};
		struct metrics_counter **m[2] = { &b->m_calls, &b->m_shared };
		for (int i = 0; i < 2; i++) {
			*m[i] = metrics_counter_new(reg, names[i][0], names[i][1], NULL);
			if (!*m[i])
				*m[i] = metrics_counter_find(reg, names[i][0], NULL);
		}
	}
	return b;
}

void gw_bread_free(struct gw_bread *b)
{
	if (!b)
		return;
	b->closing = true;
	if (b->calls_out)
		return;   /* the last answer frees it */
	free(b->slots);
	free(b);
}

static struct slot *slot_of(struct gw_bread *b, const char *name)
{
	return &b->slots[hash_fnv1a_str(name) & b->mask];
}

static void on_answer(void *ud, int err, const ProtobufCMessage *resp);

/* Send one GetBucket for the askers of list (s: the slot it holds, or
 * NULL). 0, or the client's error (nothing sent, nothing called). */
static int send_read(struct gw_bread *b, struct slot *s, const char *name,
		struct gw_bread_waiter *list)
{
	struct call *k = malloc(sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->b = b;
	k->s = s;
	k->list = list;
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = (char *)name;
	int rc = meta_client_call(b->mc, META_M_GET_BUCKET, &req.base, on_answer, k);
	if (rc) {
		free(k);
		return rc;
	}
	b->calls_out++;
	count(b->m_calls, 1);
	if (s)
		s->out = true;
	return 0;
}

static void deliver(struct gw_bread_waiter *list, int err, const ProtobufCMessage *resp)
{
	while (list) {
		struct gw_bread_waiter *w = list;
		list = w->next;   /* w is its owner's again once called */
		w->next = NULL;
		w->cb(w->ud, err, resp);
	}
}

static void on_answer(void *ud, int err, const ProtobufCMessage *resp)
{
	struct call *k = ud;
	struct gw_bread *b = k->b;
	struct slot *s = k->s;
	struct gw_bread_waiter *list = k->list, *next = NULL;
	free(k);
	b->calls_out--;
	if (s) {
		s->out = false;
		next = s->waiting;
		s->waiting = NULL;
		s->tail = &s->waiting;
		/* Those who asked while this one was out: one GetBucket sent
		 * now, after all of them asked. Sent before this answer is
		 * delivered, so a read asked for from a callback below waits
		 * for the next one, not this (already out before it asked). */
		if (next) {
			/* A closing client answers its calls with ESHUTDOWN
			 * (meta_client_close): send none to it. */
			bool shut = b->closing || err == IOL_ESHUTDOWN;
			/* Not the answered call's request id (the client's
			 * during this callback): the next call is everyone's. */
			meta_client_set_trace(b->mc, NULL);
			int rc = shut ? IOL_ESHUTDOWN : send_read(b, s, s->name, next);
			if (rc) {
				deliver(next, rc, NULL);
				next = NULL;
			} else {
				size_t n = 0;
				for (struct gw_bread_waiter *w = next; w; w = w->next)
					n++;
				count(b->m_shared, n - 1);
			}
		}
	}
	deliver(list, err, resp);
	if (b->closing && !b->calls_out) {
		free(b->slots);
		free(b);
	}
}

int gw_bread_get(struct gw_bread *b, const char *name, struct gw_bread_waiter *w,
		 meta_client_cb cb, void *ud)
{
	w->next = NULL;
	w->cb = cb;
	w->ud = ud;
	if (b->closing)
		return IOL_ESHUTDOWN;
	struct slot *s = slot_of(b, name);
	size_t len = strlen(name);
	bool fits = len < sizeof(s->name);
	if (fits && s->out && !strcmp(s->name, name)) {
		*s->tail = w;   /* served by the next GetBucket, sent when this one is back */
		s->tail = &w->next;
		return 0;
	}
	if (!fits || s->out)   /* another bucket holds the slot: a call of its own */
		return send_read(b, NULL, name, w);
	memcpy(s->name, name, len + 1);
	s->waiting = NULL;
	s->tail = &s->waiting;
	return send_read(b, s, name, w);
}

int gw_bread_read(struct gw_bread *b, struct meta_client *mc, const char *name,
		  struct gw_bread_waiter *w, meta_client_cb cb, void *ud)
{
	if (b)
		return gw_bread_get(b, name, w, cb, ud);
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = (char *)name;
	return meta_client_call(mc, META_M_GET_BUCKET, &req.base, cb, ud);
}
