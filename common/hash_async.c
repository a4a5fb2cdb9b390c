/*
 * hash_async.c — ordered MD5/SHA-256 streams on a workpool, or, for
 * MD5-only streams where the CPU has lanes, on the multi-buffer MD5
 * service (common/md5_svc). See hash_async.h.
 *
 * The hash contexts are touched by one job at a time (the strand, or the
 * service's one lane per stream), and by the loop only when no job is
 * pending (final, inline updates): the pool's mutex orders those
 * accesses (a service chunk's done is workpool_complete, under it).
 */
#include "common/hash_async.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "common/md5_svc.h"

struct ha_job {
	struct wp_job job;            /* first: container_of-free cast */
	struct md5_svc_chunk chunk;   /* the service's path (h->svc) */
	struct hash_async *h;
	struct buf *b;                /* held until done */
	const uint8_t *data;
	size_t len;
	bool busy;
};

struct hash_async {
	struct workpool_port *pt;
	struct wp_strand strand;
	struct hash_stream *md5, *sha;
	struct md5_svc *svc;          /* MD5 alone, lanes: the service's path */
	struct md5_svc_stream ms;     /* its stream (the MD5 context then) */
	hash_async_cb cb;
	void *ud;
	unsigned pending;
	unsigned algs;                /* HASH_ASYNC_* in use */
	bool lazy;                    /* !urgent: hash_async_set_urgent */
	unsigned nslots;
	struct ha_job slots[];
};

static void hash_range(struct hash_async *h, const void *data, size_t len)
{
	if (h->svc)
		md5_mb_update(&h->ms.ctx, data, len);
	else if (h->algs & HASH_ASYNC_MD5)
		hash_stream_update(h->md5, data, len);
	if (h->algs & HASH_ASYNC_SHA256)
		hash_stream_update(h->sha, data, len);
}

static void job_run(struct wp_job *wj)
{
	struct ha_job *j = (struct ha_job *)wj;
	hash_range(j->h, j->data, j->len);
}

/* On a service thread: the chunk is hashed; its done goes to the loop. */
static void chunk_done(struct md5_svc_chunk *c)
{
	struct ha_job *j = (struct ha_job *)((char *)c - offsetof(struct ha_job, chunk));
	workpool_complete(&j->job, 0);
}

static void job_done(struct wp_job *wj, int status)
{
	struct ha_job *j = (struct ha_job *)wj;
	struct hash_async *h = j->h;
	if (status)
		/* The pool stopped before hashing it (shutdown): the digest
		 * would be wrong, so hash here; the owner is finishing anyway. */
		hash_range(h, j->data, j->len);
	buf_unref(j->b);
	j->b = NULL;
	j->busy = false;
	h->pending--;
	if (h->cb)
		h->cb(h, h->ud);
}

struct hash_async *hash_async_new(struct workpool_port *pt, unsigned algs, unsigned slots,
				  hash_async_cb cb, void *ud)
{
	if (!slots)
		slots = 1;
	struct hash_async *h = calloc(1, sizeof(*h) + slots * sizeof(struct ha_job));
	if (!h)
		return NULL;
	h->pt = pt;
	h->cb = cb;
	h->ud = ud;
	h->nslots = slots;
	if (hash_async_set_algs(h, algs))
		goto fail;
	for (unsigned i = 0; i < slots; i++) {
		h->slots[i].h = h;
		h->slots[i].job.run = job_run;
		h->slots[i].job.done = job_done;
		h->slots[i].chunk.done = chunk_done;
	}
	return h;
fail:
	hash_async_free(h);
	return NULL;
}

int hash_async_set_algs(struct hash_async *h, unsigned algs)
{
	/* MD5 alone with a pool: lanes, when the CPU has them (the service
	 * is NULL otherwise, and OpenSSL on the pool stays). SHA-256 too:
	 * one pass on the pool reads the bytes once for both. */
	h->svc = NULL;
	if (algs == HASH_ASYNC_MD5 && h->pt &&
	    (h->svc = md5_svc_get(workpool_threads(workpool_port_pool(h->pt))))) {
		md5_svc_stream_init(&h->ms);
		h->algs = algs;
		return 0;
	}
	if ((algs & HASH_ASYNC_MD5) && !h->md5 && !(h->md5 = hash_stream_new(HASH_MD5)))
		return -ENOMEM;
	if ((algs & HASH_ASYNC_SHA256) && !h->sha && !(h->sha = hash_stream_new(HASH_SHA256)))
		return -ENOMEM;
	h->algs = algs;
	return 0;
}

void hash_async_set_urgent(struct hash_async *h, bool urgent)
{
	h->lazy = !urgent;
}

void hash_async_set_cb(struct hash_async *h, hash_async_cb cb, void *ud)
{
	h->cb = cb;
	h->ud = ud;
}

int hash_async_update(struct hash_async *h, struct buf *b, size_t off, size_t len,
		      size_t inline_bytes)
{
	if (!len)
		return 0;
	if (!h->pt || (len < inline_bytes && !h->pending)) {
		hash_range(h, b->data + off, len);
		return 0;
	}
	struct ha_job *j = NULL;
	for (unsigned i = 0; i < h->nslots; i++)
		if (!h->slots[i].busy) {
			j = &h->slots[i];
			break;
		}
	if (!j)
		return -EAGAIN;
	j->busy = true;
	j->b = buf_ref(b);
	j->data = b->data + off;
	j->len = len;
	h->pending++;
	if (h->svc) {
		j->chunk.data = j->data;
		j->chunk.len = len;
		j->chunk.urgent = !h->lazy;
		workpool_adopt(h->pt, &j->job);
		md5_svc_submit(h->svc, &h->ms, &j->chunk);
		return 0;
	}
	workpool_submit(h->pt, &h->strand, &j->job);
	return 0;
}

int hash_async_update_now(struct hash_async *h, const void *data, size_t len)
{
	if (h->pending)
		return -EBUSY;
	hash_range(h, data, len);
	return 0;
}

unsigned hash_async_pending(const struct hash_async *h)
{
	return h->pending;
}

void hash_async_final(struct hash_async *h, uint8_t *md5, uint8_t *sha256)
{
	uint8_t scratch[SHA256_LEN];
	if (h->svc)
		md5_mb_final(&h->ms.ctx, md5 ? md5 : scratch);
	else if (h->algs & HASH_ASYNC_MD5)
		hash_stream_final(h->md5, md5 ? md5 : scratch);
	if (h->algs & HASH_ASYNC_SHA256)
		hash_stream_final(h->sha, sha256 ? sha256 : scratch);
}

void hash_async_free(struct hash_async *h)
{
	if (!h)
		return;
	hash_stream_free(h->md5);
	hash_stream_free(h->sha);
	free(h);
}
