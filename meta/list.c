/*
 * list.c — S3 listing as range scans of the object table, and of the
 * upload table for ListMultipartUploads (semantics in list.h): one scan
 * loop for both, so prefixes, delimiter roll-up, markers and truncation
 * behave the same.
 *
 * Cost: one seek to the start, one step per key returned, and one seek per
 * common prefix: after emitting a common prefix cp the cursor jumps to the
 * smallest key above every key that starts with cp (cp with its last
 * non-0xFF byte incremented), so a prefix holding a million keys costs one
 * seek, not a million steps. Memory: at most META_LIST_MAX_KEYS entries.
 */
#include "meta/list.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"

/* Byte-order compare of a[0..an) and b[0..bn). */
static int bcmp_len(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int add_entry(struct meta_list_page *p, const char *name, size_t len, bool is_prefix)
{
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, name, len);
	copy[len] = 0;
	p->entries[p->n++] = (struct meta_list_entry){ .name = copy, .name_len = len,
						       .is_prefix = is_prefix };
	return 0;
}

/* One scan of a table for a listing (list.h). Iterator keys are the S3
 * key (objects) or "key 0x00 upload_id" (uploads: the S3 key ends at the
 * 0x00, and each upload is an entry of its own). */
struct scan {
	const char *prefix, *delim;
	size_t plen, dlen;
	const char *marker;        /* S3 key: common prefixes <= it are skipped */
	size_t marker_len;         /* 0: no marker (start at the prefix) */
	const char *start;         /* iterator key to start at, when above the prefix */
	size_t start_len;
	bool skip_start;           /* an entry exactly at start is not listed */
	bool uploads;
	bool want_records;
	unsigned max;
	const char *lo, *hi;       /* key range bounds ("": none) */
	size_t lo_len, hi_len;
};

/* The S3 key of iterator key k[0..n). */
static size_t s3_key_len(const struct scan *sc, const char *k, size_t n)
{
	const char *z = sc->uploads ? memchr(k, 0, n) : NULL;
	return z ? (size_t)(z - k) : n;
}

/* Entry for the key under the cursor: its name and, as asked, its record. */
static int add_key(struct meta_list_page *out, struct meta_state_objiter *it,
		   const struct scan *sc, const char *k, size_t kn)
{
	int rc = add_entry(out, k, kn, false);
	if (rc)
		return rc;
	struct meta_list_entry *e = &out->entries[out->n - 1];
	if (sc->uploads)
		return meta_state_objiter_upload(it, &e->upload);
	if (sc->want_records)
		return meta_state_objiter_record(it, &e->rec);
	return 0;
}

/* Seek past every key that starts with k[0..cn): to cp with its last
 * non-0xFF byte incremented. false when nothing sorts above. */
static bool skip_prefix(struct meta_state_objiter *it, const char *k, size_t cn)
{
	char succ[META_KEY_MAX + 1];
	memcpy(succ, k, cn);
	while (cn > 0 && (uint8_t)succ[cn - 1] == 0xff)
		cn--;
	if (cn == 0)
		return false;
	succ[cn - 1] = (char)((uint8_t)succ[cn - 1] + 1);
	meta_state_objiter_seek(it, succ, cn);
	return true;
}

static int scan(struct meta_state_objiter *it, const struct scan *sc, struct meta_list_page *out)
{
	int rc = 0;
	if (sc->marker_len && bcmp_len(sc->start, sc->start_len, sc->prefix, sc->plen) > 0)
		meta_state_objiter_seek(it, sc->start, sc->start_len);
	else
		meta_state_objiter_seek(it, sc->prefix, sc->plen);
	if (sc->lo_len) {
		/* The range starts above where the listing would: every key
		 * below lo belongs to another range. */
		size_t cn;
		const char *cur = meta_state_objiter_valid(it) ? meta_state_objiter_key(it, &cn) : NULL;
		if (cur && bcmp_len(cur, cn, sc->lo, sc->lo_len) < 0)
			meta_state_objiter_seek(it, sc->lo, sc->lo_len);
	}
	if (sc->skip_start && meta_state_objiter_valid(it)) {
		size_t rn;
		const char *r = meta_state_objiter_key(it, &rn);
		if (bcmp_len(r, rn, sc->start, sc->start_len) == 0)
			meta_state_objiter_next(it);
	}

	while (meta_state_objiter_valid(it)) {
		size_t rn;
		const char *k = meta_state_objiter_key(it, &rn);
		size_t kn = s3_key_len(sc, k, rn);
		if (kn < sc->plen || memcmp(k, sc->prefix, sc->plen) != 0)
			break;   /* past the prefix range */
		if (sc->hi_len && bcmp_len(k, kn, sc->hi, sc->hi_len) >= 0)
			break;   /* past the key range: the next range's */
		const char *d = NULL;
		if (sc->dlen)
			d = memmem(k + sc->plen, kn - sc->plen, sc->delim, sc->dlen);
		if (d) {
			size_t cn = (size_t)(d - k) + sc->dlen;
			bool skip = sc->marker_len && bcmp_len(k, cn, sc->marker, sc->marker_len) <= 0;
			if (!skip) {
				if (out->n == sc->max) {
					out->truncated = true;
					break;
				}
				rc = add_entry(out, k, cn, true);
				if (rc)
					return rc;
			}
			if (!skip_prefix(it, k, cn))
				break;   /* nothing sorts above */
			continue;
		}
		if (!sc->uploads && meta_state_objiter_is_marker(it)) {
			meta_state_objiter_next(it);   /* deleted (versioning) */
			continue;
		}
		if (out->n == sc->max) {
			out->truncated = true;
			break;
		}
		rc = add_key(out, it, sc, k, kn);
		if (rc)
			return rc;
		meta_state_objiter_next(it);
	}
	return meta_state_objiter_error(it);
}

/* The common part of both requests: prefix, delimiter and max. */
static int scan_init(struct scan *sc, const char *prefix, const char *delim, unsigned max,
		     struct meta_list_page *out)
{
	memset(out, 0, sizeof(*out));
	sc->prefix = prefix ? prefix : "";
	sc->delim = delim ? delim : "";
	sc->plen = strlen(sc->prefix);
	sc->dlen = strlen(sc->delim);
	sc->max = max > META_LIST_MAX_KEYS ? META_LIST_MAX_KEYS : max;
	sc->lo = sc->hi = "";
	sc->lo_len = sc->hi_len = 0;
	return sc->plen > META_KEY_MAX || sc->dlen > META_KEY_MAX ? -EINVAL : 0;
}

static void set_bounds(struct scan *sc, const char *lo, const char *hi)
{
	sc->lo = lo ? lo : "";
	sc->hi = hi ? hi : "";
	sc->lo_len = strlen(sc->lo);
	sc->hi_len = strlen(sc->hi);
}

/* Room for the page's entries. 1: max is 0, the empty page is the answer. */
static int page_alloc(const struct scan *sc, struct meta_list_page *out)
{
	if (sc->max == 0)
		return 1;
	out->entries = calloc(sc->max, sizeof(*out->entries));
	return out->entries ? 0 : -ENOMEM;
}

int meta_list(struct meta_state *s, const struct meta_list_req *req, struct meta_list_page *out)
{
	struct scan sc = { .want_records = req->want_records };
	char marker[META_KEY_MAX + 1];
	size_t marker_len = 0;
	int rc = scan_init(&sc, req->prefix, req->delimiter, req->max_keys, out);
	if (rc)
		return rc;
	set_bounds(&sc, req->lo, req->hi);
	if (req->token && req->token[0]) {
		long n = meta_list_token_decode(req->token, marker, sizeof(marker));
		if (n < 0)
			return -EINVAL;
		marker_len = (size_t)n;
	} else if (req->start_after) {
		marker_len = strlen(req->start_after);
		if (marker_len > META_KEY_MAX)
			return -EINVAL;
		memcpy(marker, req->start_after, marker_len);
	}
	marker[marker_len] = 0;
	/* Start at marker + "\0": keys never hold a 0 byte, so that is the
	 * first key above the marker. */
	sc.marker = sc.start = marker;
	sc.marker_len = marker_len;
	sc.start_len = marker_len + 1;
	if ((rc = page_alloc(&sc, out)))
		return rc < 0 ? rc : 0;

	struct meta_state_objiter *it = NULL;
	rc = meta_state_objiter_new(s, req->bucket, &it);
	if (rc)
		return rc;
	rc = scan(it, &sc, out);
	meta_state_objiter_free(it);
	if (rc == 0 && out->truncated) {
		const struct meta_list_entry *last = &out->entries[out->n - 1];
		meta_list_token_encode(last->name, last->name_len, out->next_token);
	}
	return rc;
}

int meta_list_uploads(struct meta_state *s, const struct meta_list_uploads_req *req,
		      struct meta_list_page *out)
{
	struct scan sc = { .uploads = true };
	/* Start at key-marker 0x00 upload-id-marker (that entry itself
	 * skipped), or at key-marker 0x01: after every "key-marker 0x00 id".
	 * Upload ids are 16 bytes, so a longer id marker is cut to 16: ids
	 * above the cut are above the marker, an id equal to it is below the
	 * marker and skipped as an exact match. */
	char start[META_KEY_MAX + 1 + 16];
	int rc = scan_init(&sc, req->prefix, req->delimiter, req->max_uploads, out);
	if (rc)
		return rc;
	set_bounds(&sc, req->lo, req->hi);
	const char *km = req->key_marker ? req->key_marker : "";
	const char *um = req->upload_id_marker ? req->upload_id_marker : "";
	size_t kml = strlen(km), uml = strnlen(um, 16);
	if (kml > META_KEY_MAX)
		return -EINVAL;
	memcpy(start, km, kml);
	sc.marker = km;
	sc.marker_len = kml;
	sc.start = start;
	if (kml && uml) {
		start[kml] = 0;
		memcpy(start + kml + 1, um, uml);
		sc.start_len = kml + 1 + uml;
		sc.skip_start = true;
	} else {
		start[kml] = 1;
		sc.start_len = kml + 1;
	}
	if ((rc = page_alloc(&sc, out)))
		return rc < 0 ? rc : 0;

	struct meta_state_objiter *it = NULL;
	rc = meta_state_uploaditer_new(s, req->bucket, &it);
	if (rc)
		return rc;
	rc = scan(it, &sc, out);
	meta_state_objiter_free(it);
	return rc;
}

void meta_list_page_free(struct meta_list_page *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->entries[i].name);
		meta_state_free_msg(p->entries[i].rec);
		meta_state_free_msg(p->entries[i].upload);
	}
	free(p->entries);
	memset(p, 0, sizeof(*p));
}
