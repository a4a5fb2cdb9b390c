/*
 * s3_put_hdrs.c — what a PUT's request headers (or a POST's form fields,
 * in the same list form) put into its object record: Content-Type,
 * Content-Encoding (aws-chunked framing dropped), Content-Disposition,
 * Cache-Control, Expires, Content-Language and the x-amz-meta-* user
 * metadata (names lowercased, values as sent); and whether its
 * x-amz-storage-class is one this store has. Contracts in s3_put.h.
 *
 * Owns the user-metadata arrays it fills (struct s3_put_user_meta, freed
 * by s3_put_user_meta_free); the record only points into them.
 *
 * Thread: any; no I/O.
 */
#include "gateway/s3_put.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_gc.h"
#include "gateway/s3_ops.h"
#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/s3_access.h"
#include "gateway/s3_attrs.h"
#include "gateway/s3_cond.h"
#include "gateway/s3_cond_ops.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_lock.h"
#include "gateway/s3_tagging.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/s3_lifecycle.h"
#include "gateway/s3_quota.h"

static bool is_user_meta(const struct sigv4_header *h)
{
	return h->name_len > 11 && strncasecmp(h->name, "x-amz-meta-", 11) == 0;
}

void s3_put_user_meta_free(struct s3_put_user_meta *um)
{
	free(um->ents), free(um->pents), free(um->names), free(um->vals);
	memset(um, 0, sizeof(*um));
}

static int user_meta_get(const struct sigv4_header *hs, size_t nh, struct s3_put_user_meta *um)
{
	memset(um, 0, sizeof(*um));
	size_t n_um = 0;
	for (size_t i = 0; i < nh; i++)
		n_um += is_user_meta(&hs[i]);
	if (!n_um)
		return 0;
	um->ents = calloc(n_um, sizeof(*um->ents));
	um->pents = calloc(n_um, sizeof(*um->pents));
	size_t nb = 0, vb = 0;
	for (size_t i = 0; i < nh; i++)
		if (is_user_meta(&hs[i])) {
			nb += hs[i].name_len;
			vb += hs[i].value_len + 1;
		}
	um->names = malloc(nb + 1);
	um->vals = malloc(vb + 1);
	if (!um->ents || !um->pents || !um->names || !um->vals) {
		s3_put_user_meta_free(um);
		return -ENOMEM;
	}
	char *np = um->names, *vp = um->vals;
	size_t j = 0;
	for (size_t i = 0; i < nh; i++) {
		const struct sigv4_header *h = &hs[i];
		if (!is_user_meta(h))
			continue;
		iolake__meta__object_record__user_meta_entry__init(&um->ents[j]);
		um->ents[j].key = np;
		for (size_t b = 11; b < h->name_len; b++)
			*np++ = (char)((h->name[b] >= 'A' && h->name[b] <= 'Z') ? h->name[b] + 32 : h->name[b]);
		*np++ = 0;
		um->ents[j].value = vp;
		memcpy(vp, h->value, h->value_len);
		vp += h->value_len;
		*vp++ = 0;
		um->pents[j] = &um->ents[j];
		j++;
	}
	um->n = n_um;
	return 0;
}

/* A header of the list, copied NUL-terminated into buf (truncated to
 * cap); NULL when absent. */
static char *list_str(const struct sigv4_header *h, size_t n, const char *name, char *buf,
		      size_t cap)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (h[i].name_len == nl && strncasecmp(h[i].name, name, nl) == 0) {
			size_t l = h[i].value_len < cap - 1 ? h[i].value_len : cap - 1;
			memcpy(buf, h[i].value, l);
			buf[l] = '\0';
			return buf;
		}
	return NULL;
}

int s3_put_rec_from_list(const struct sigv4_header *h, size_t n, Iolake__Meta__ObjectRecord *r,
			 struct s3_put_hdrs *b)
{
	r->content_type = list_str(h, n, "content-type", b->ct, sizeof(b->ct));
	r->content_encoding = list_str(h, n, "content-encoding", b->ce, sizeof(b->ce));
	/* aws-chunked is transfer framing, not the object's encoding. */
	if (r->content_encoding && strncasecmp(r->content_encoding, "aws-chunked", 11) == 0) {
		char *rest = r->content_encoding + 11;
		while (*rest == ',' || *rest == ' ')
			rest++;
		r->content_encoding = rest;
	}
	r->content_disposition = list_str(h, n, "content-disposition", b->cd, sizeof(b->cd));
	r->cache_control = list_str(h, n, "cache-control", b->cc, sizeof(b->cc));
	r->expires = list_str(h, n, "expires", b->ex, sizeof(b->ex));
	r->content_language = list_str(h, n, "content-language", b->cl, sizeof(b->cl));
	if (user_meta_get(h, n, &b->um))
		return -ENOMEM;
	r->n_user_meta = b->um.n;
	r->user_meta = b->um.pents;
	return 0;
}

int s3_put_rec_from_headers(struct s3_call *c, Iolake__Meta__ObjectRecord *r,
			    struct s3_put_hdrs *b)
{
	const struct http_request *hr = s3_call_http(c);
	return s3_put_rec_from_list(hr->headers, hr->n_headers, r, b);
}

enum s3_err s3_put_storage_class(const struct sigv4_header *h, size_t n)
{
	static const char name[] = "x-amz-storage-class";
	for (size_t i = 0; i < n; i++) {
		if (h[i].name_len != sizeof(name) - 1 ||
		    strncasecmp(h[i].name, name, sizeof(name) - 1) != 0)
			continue;
		if (h[i].value_len != 8 || memcmp(h[i].value, "STANDARD", 8) != 0)
			return S3E_InvalidStorageClass;
	}
	return S3E_OK;
}
