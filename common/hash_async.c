/*
 * hash_async.c — ordered MD5/SHA-256 streams on a workpool. See
 * hash_async.h.
 *
 * The hash contexts are touched by one job at a time (the strand), and
 * by the loop only when no job is pending (final, inline updates): the
 * pool's mutex orders those accesses.
 */
#include "common/hash_async.h"

#include <errno.h>
#include <stdlib.h>

struct ha_job {
	struct wp_job job;            /* first: container_of-free cast */
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
	hash_async_cb cb;
	void *ud;
	unsigned pending;
	unsigned algs;                /* HASH_ASYNC_* in use */
	unsigned nslots;
	struct ha_job slots[];
};

static void hash_range(struct hash_async *h, const void *data, size_t len)
{
	if (h->algs & HASH_ASYNC_MD5)
		hash_stream_update(h->md5, data, len);
	if (h->algs & HASH_ASYNC_SHA256)
		hash_stream_update(h->sha, data, len);
}

static void job_run(struct wp_job *wj)
{
	struct ha_job *j = (struct ha_job *)wj;
	hash_range(j->h, j->data, j->len);
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
	}
	return h;
fail:
	hash_async_free(h);
	return NULL;
}

int hash_async_set_algs(struct hash_async *h, unsigned algs)
{
	if ((algs & HASH_ASYNC_MD5) && !h->md5 && !(h->md5 = hash_stream_new(HASH_MD5)))
		return -ENOMEM;
	if ((algs & HASH_ASYNC_SHA256) && !h->sha && !(h->sha = hash_stream_new(HASH_SHA256)))
		return -ENOMEM;
	h->algs = algs;
	return 0;
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
	if (h->algs & HASH_ASYNC_MD5)
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
