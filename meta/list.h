/*
 * list.h — S3 object listing (ListObjectsV2, and V1 with marker) over the
 * object table of meta/state.h: prefix, delimiter with common prefixes,
 * start-after / marker, continuation tokens, max-keys; and the same
 * listing of multipart uploads (ListMultipartUploads).
 *
 * The listing of a request is the ordered sequence of entries e, where an
 * entry is either a key k (having the prefix, without the delimiter after
 * the prefix) or a common prefix cp = k up to and including the first
 * delimiter after the prefix, such that e > marker (byte order), each
 * common prefix once. The marker is the decoded continuation token when
 * given, else start-after. A page is the first max-keys entries of that
 * sequence; each common prefix counts as one. The next token encodes the
 * last entry of the page, so pages concatenate to the whole sequence.
 *
 * ListMultipartUploads (meta_list_uploads) is the same sequence over the
 * upload table with each key k replaced by its uploads in upload-id
 * order, and the marker a pair (key-marker, upload-id-marker): an upload
 * (k, id) is listed when (k, id) > the pair, every upload of key-marker
 * is skipped when upload-id-marker is empty, and a common prefix when
 * cp > key-marker. So a page that ends on a common prefix continues, with
 * that prefix as key-marker, after every key under it. One scan serves
 * both (list.c).
 *
 * Read-only: any thread. A page sees one consistent view of the state;
 * successive pages may see later writes (as S3 does).
 */
#ifndef META_LIST_H
#define META_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "meta/state.h"

#define META_LIST_MAX_KEYS 1000
/* base64url of a version byte and a key of META_KEY_MAX bytes, + NUL. */
#define META_LIST_TOKEN_MAX (((1 + META_KEY_MAX + 2) / 3) * 4 + 1)

struct meta_list_req {
	const char *bucket;
	const char *prefix;        /* NULL or "": everything */
	const char *delimiter;     /* NULL or "": no common prefixes */
	const char *start_after;   /* V2 start-after or V1 marker; NULL: none */
	const char *token;         /* V2 continuation token; wins over start_after */
	unsigned max_keys;         /* 0: an empty, untruncated page; above
	                            * META_LIST_MAX_KEYS: clamped to it */
	bool want_records;         /* decode each key's record (size, etag, ...) */
	const char *lo, *hi;       /* key range: only keys in [lo, hi) are seen
	                            * (NULL or "": unbounded on that side) */
};

struct meta_list_entry {
	char *name;                /* key or common prefix, NUL-terminated */
	size_t name_len;
	bool is_prefix;
	Iolake__Meta__ObjectRecord *rec;   /* keys, when want_records; else NULL */
	Iolake__Meta__MultipartUpload *upload;   /* meta_list_uploads: each upload */
};

struct meta_list_page {
	struct meta_list_entry *entries;   /* keys and prefixes in listing order */
	size_t n;
	bool truncated;
	/* When truncated: the V2 NextContinuationToken. The V1 NextMarker is
	 * entries[n - 1].name. */
	char next_token[META_LIST_TOKEN_MAX];
};

/*
 * Fill out with one page. 0; -EINVAL for a bad bucket name, prefix or
 * marker over META_KEY_MAX bytes, or a token that does not decode (S3
 * InvalidArgument); -ENOMEM; IOL_ECORRUPT or -EIO from storage. A missing
 * bucket lists as empty: the caller checks existence (NoSuchBucket).
 * Free with meta_list_page_free, also after an error.
 */
int meta_list(struct meta_state *s, const struct meta_list_req *req, struct meta_list_page *out);
void meta_list_page_free(struct meta_list_page *p);

/* The continuation token naming name[0..len) as the last entry listed
 * (out holds META_LIST_TOKEN_MAX), and back: the decoded marker into
 * out[0..cap) NUL-terminated, its length, or -EINVAL (meta_list's rule). */
void meta_list_token_encode(const char *name, size_t len, char *out);
long meta_list_token_decode(const char *token, char *out, size_t cap);

struct meta_list_uploads_req {
	const char *bucket;
	const char *prefix;           /* NULL or "": every key */
	const char *delimiter;        /* NULL or "": no common prefixes */
	const char *key_marker;       /* NULL or "": from the start */
	const char *upload_id_marker; /* with key_marker only; NULL or "": after
	                               * every upload of key_marker */
	unsigned max_uploads;         /* 0: an empty, untruncated page; above
	                               * META_LIST_MAX_KEYS: clamped to it */
	const char *lo, *hi;          /* as meta_list_req's */
};

/*
 * Fill out with one page of uploads and common prefixes (list.h's
 * top comment). Each upload is an entry named by its key with its record
 * in `upload`; a common prefix counts as one. next_token stays empty: the
 * next markers are the last entry's (cp, "") or (key, upload id). 0;
 * -EINVAL for a bad bucket name, or a prefix, delimiter or key-marker
 * over META_KEY_MAX bytes; -ENOMEM; IOL_ECORRUPT or -EIO from storage. A
 * missing bucket lists as empty. Free with meta_list_page_free.
 */
int meta_list_uploads(struct meta_state *s, const struct meta_list_uploads_req *req,
		      struct meta_list_page *out);

#endif
