/*
 * form.c — streaming multipart/form-data. See form.h.
 *
 * The one invariant: bytes that might begin the delimiter are withheld
 * (f->dm of them) until the delimiter completes or fails; a failed match
 * releases them as data. A boundary holds no CR (RFC 2046 bchars), so the
 * delimiter "\r\n--<boundary>" has its only CR first: on a mismatch the
 * only place a new match can start is the current byte, when it is a CR.
 * No backtracking, linear time, and the withheld bytes are always a prefix
 * of the delimiter (so they are released from f->delim, not stored).
 */
#include "gateway/form.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static bool bchar(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("'()+_,-./:=? ", c) != NULL);
}

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

int form_boundary(const char *ct, size_t len, char *out)
{
	static const char mt[] = "multipart/form-data";
	size_t i = 0;
	while (i < len && ows(ct[i]))
		i++;
	if (len - i < sizeof(mt) - 1 || strncasecmp(ct + i, mt, sizeof(mt) - 1) != 0)
		return -EINVAL;
	i += sizeof(mt) - 1;
	/* Parameters: ; name=value | name="value" */
	while (i < len) {
		while (i < len && ows(ct[i]))
			i++;
		if (i == len)
			break;
		if (ct[i++] != ';')
			return -EINVAL;
		while (i < len && ows(ct[i]))
			i++;
		size_t ns = i;
		while (i < len && ct[i] != '=' && ct[i] != ';')
			i++;
		size_t ne = i;
		while (ne > ns && ows(ct[ne - 1]))
			ne--;
		if (i == len || ct[i] != '=')
			continue;
		i++;
		char v[FORM_BOUNDARY_MAX + 1];
		size_t vl = 0;
		bool quoted = i < len && ct[i] == '"';
		if (quoted)
			i++;
		while (i < len && (quoted ? ct[i] != '"' : (ct[i] != ';' && !ows(ct[i])))) {
			if (vl == FORM_BOUNDARY_MAX)
				return -EINVAL;
			v[vl++] = ct[i++];
		}
		if (quoted) {
			if (i == len)
				return -EINVAL;
			i++;
		}
		if (ne - ns == 8 && strncasecmp(ct + ns, "boundary", 8) == 0) {
			if (vl == 0 || v[vl - 1] == ' ')
				return -EINVAL;
			for (size_t k = 0; k < vl; k++)
				if (!bchar(v[k]))
					return -EINVAL;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return (int)vl;
		}
	}
	return -EINVAL;
}

void form_init(struct form *f, const char *boundary, size_t blen, const struct form_cbs *cbs,
	       void *ud)
{
	f->cbs = cbs;
	f->ud = ud;
	f->err = 0;
	memcpy(f->delim, "\r\n--", 4);
	if (blen > FORM_BOUNDARY_MAX)
		blen = FORM_BOUNDARY_MAX;
	memcpy(f->delim + 4, boundary, blen);
	f->dlen = 4 + blen;
	/* The first delimiter may open the body: as if a CRLF came first. */
	f->st = FORM_PREAMBLE;
	f->dm = 2;
	f->in_file = false;
	f->head_len = 0;
	f->fields_len = 0;
	f->val_len = 0;
}

static int fail(struct form *f, int err)
{
	f->st = FORM_ERROR;
	f->err = err;
	return err;
}

/* Body bytes of the current part (a field's or the file's). */
static int emit(struct form *f, const char *p, size_t n)
{
	if (!n || f->st == FORM_PREAMBLE)
		return 0;
	if (f->in_file)
		return f->cbs->on_file_data(f->ud, p, n);
	if (n > FORM_FIELDS_MAX - f->fields_len - f->val_len)
		return -E2BIG;
	memcpy(f->fields + f->fields_len + f->val_len, p, n);
	f->val_len += n;
	return 0;
}

/* The value of parameter param (name or filename) of a
 * Content-Disposition value v[0..n), into out (cap bytes with the NUL).
 * 1 found, 0 absent, -EBADMSG malformed or too long. */
static int disp_param(const char *v, size_t n, const char *param, char *out, size_t cap)
{
	size_t pl = strlen(param), i = 0;
	while (i < n) {
		while (i < n && v[i] != ';')
			i++;
		if (i == n)
			return 0;
		i++;
		while (i < n && ows(v[i]))
			i++;
		size_t ns = i;
		while (i < n && v[i] != '=' && v[i] != ';')
			i++;
		size_t ne = i;
		while (ne > ns && ows(v[ne - 1]))
			ne--;
		if (i == n || v[i] != '=')
			continue;
		i++;
		while (i < n && ows(v[i]))
			i++;
		size_t ol = 0;
		if (i < n && v[i] == '"') {
			i++;
			/* A quoted-string; browsers percent-encode '"' and
			 * send '\' as is (WHATWG), so there are no escapes. */
			size_t s = i;
			while (i < n && v[i] != '"')
				i++;
			if (i == n)
				return -EBADMSG;
			ol = i - s;
			if (ol >= cap)
				return -EBADMSG;
			if (ne - ns == pl && strncasecmp(v + ns, param, pl) == 0) {
				memcpy(out, v + s, ol);
				out[ol] = '\0';
				return 1;
			}
			i++;
		} else {
			size_t s = i;
			while (i < n && v[i] != ';' && !ows(v[i]))
				i++;
			ol = i - s;
			if (ne - ns == pl && strncasecmp(v + ns, param, pl) == 0) {
				if (ol >= cap)
					return -EBADMSG;
				memcpy(out, v + s, ol);
				out[ol] = '\0';
				return 1;
			}
		}
	}
	return 0;
}

/* The header block is in f->head ("\r\n" + lines + "\r\n\r\n"): the part
 * starts. */
static int part_begin(struct form *f)
{
	f->name[0] = f->filename[0] = f->ctype[0] = '\0';
	bool have_disp = false;
	size_t i = 2, end = f->head_len - 2;
	while (i < end) {
		const char *line = f->head + i;
		const char *eol = memmem(line, end - i, "\r\n", 2);
		size_t ll = (size_t)(eol - line);
		i += ll + 2;
		const char *colon = memchr(line, ':', ll);
		if (!colon)
			return -EBADMSG;
		size_t nl = (size_t)(colon - line);
		const char *v = colon + 1;
		size_t vl = ll - nl - 1;
		while (vl && ows(*v))
			v++, vl--;
		while (vl && ows(v[vl - 1]))
			vl--;
		if (nl == 19 && strncasecmp(line, "Content-Disposition", 19) == 0) {
			if (vl < 9 || strncasecmp(v, "form-data", 9) != 0 ||
			    (vl > 9 && v[9] != ';' && !ows(v[9])))
				return -EBADMSG;
			if (disp_param(v, vl, "name", f->name, sizeof(f->name)) != 1 ||
			    disp_param(v, vl, "filename", f->filename, sizeof(f->filename)) < 0)
				return -EBADMSG;
			have_disp = true;
		} else if (nl == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
			if (vl >= sizeof(f->ctype))
				return -EBADMSG;
			memcpy(f->ctype, v, vl);
			f->ctype[vl] = '\0';
		}
	}
	if (!have_disp)
		return -EBADMSG;
	f->in_file = strcasecmp(f->name, "file") == 0;
	f->val_len = 0;
	if (f->in_file)
		return f->cbs->on_file_begin(f->ud, f->filename, f->ctype);
	/* The name goes into the fields' budget too. */
	size_t nl = strlen(f->name) + 1;
	if (nl > FORM_FIELDS_MAX - f->fields_len)
		return -E2BIG;
	f->fields_len += nl;
	return 0;
}

static int part_end(struct form *f)
{
	if (f->st == FORM_PREAMBLE)
		return 0;
	if (f->in_file) {
		f->in_file = false;
		return f->cbs->on_file_end(f->ud);
	}
	if (f->fields_len + f->val_len + 1 > FORM_FIELDS_MAX + 1)
		return -E2BIG;
	char *v = f->fields + f->fields_len;
	v[f->val_len] = '\0';
	f->fields_len += f->val_len + 1;
	if (f->fields_len > FORM_FIELDS_MAX)
		return -E2BIG;
	return f->cbs->on_field(f->ud, f->name, v, f->val_len);
}

/* Scan body (or preamble) bytes for the delimiter; returns the bytes used
 * (up to and including a completed delimiter), or a negative error. */
static ssize_t scan_body(struct form *f, const char *p, size_t n)
{
	size_t i = 0, span = 0; /* span: start of the unreleased run of data */
	int rc;
	while (i < n) {
		if (f->dm == 0) {
			const char *cr = memchr(p + i, '\r', n - i);
			if (!cr) {
				i = n;
				break;
			}
			i = (size_t)(cr - p);
			f->dm = 1;
			if ((rc = emit(f, p + span, i - span)))
				return rc;
			i++;
			span = i;
			continue;
		}
		if (p[i] == f->delim[f->dm]) {
			f->dm++;
			i++;
			span = i;
			if (f->dm == f->dlen) {
				f->dm = 0;
				if ((rc = part_end(f)))
					return rc;
				f->st = FORM_AFTER;
				return (ssize_t)i;
			}
			continue;
		}
		/* Mismatch: the withheld prefix was data after all. */
		size_t held = f->dm;
		f->dm = 0;
		if ((rc = emit(f, f->delim, held)))
			return rc;
		span = i;
		if (p[i] == '\r') {
			f->dm = 1;
			span = ++i;
		}
	}
	if (f->dm == 0 && (rc = emit(f, p + span, i - span)))
		return rc;
	return (ssize_t)n;
}

int form_feed(struct form *f, const char *data, size_t len)
{
	if (f->st == FORM_ERROR)
		return f->err;
	size_t i = 0;
	while (i < len) {
		char c = data[i];
		switch (f->st) {
		case FORM_PREAMBLE:
		case FORM_BODY: {
			ssize_t used = scan_body(f, data + i, len - i);
			if (used < 0)
				return fail(f, (int)used);
			i += (size_t)used;
			break;
		}
		case FORM_AFTER:
			i++;
			if (c == '-')
				f->st = FORM_AFTER_DASH;
			else if (c == '\r')
				f->st = FORM_AFTER_CR;
			else if (!ows(c))
				return fail(f, -EBADMSG);
			break;
		case FORM_AFTER_DASH:
			i++;
			if (c != '-')
				return fail(f, -EBADMSG);
			f->st = FORM_DONE;
			break;
		case FORM_AFTER_CR:
			i++;
			if (c != '\n')
				return fail(f, -EBADMSG);
			f->st = FORM_HEAD;
			memcpy(f->head, "\r\n", 2);
			f->head_len = 2;
			break;
		case FORM_HEAD:
			i++;
			if (f->head_len == sizeof(f->head))
				return fail(f, -E2BIG);
			f->head[f->head_len++] = c;
			if (f->head_len >= 4 && memcmp(f->head + f->head_len - 4, "\r\n\r\n", 4) == 0) {
				f->part_at = i;
				int rc = part_begin(f);
				if (rc)
					return fail(f, rc);
				f->st = FORM_BODY;
				f->dm = 0;
			}
			break;
		case FORM_DONE:
			return 0; /* the epilogue */
		case FORM_ERROR:
			return f->err;
		}
	}
	return 0;
}

int form_finish(struct form *f)
{
	if (f->st == FORM_ERROR)
		return f->err;
	return f->st == FORM_DONE ? 0 : -EBADMSG;
}
