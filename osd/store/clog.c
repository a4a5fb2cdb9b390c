/*
 * clog.c — the commit-log ring (format and rules in clog.h).
 *
 * Owns: the ring's fd, a 4 KiB-aligned record buffer, and the positions:
 * tail (next write offset), next seq, and the live span as logical byte
 * counters (lpos counts every byte consumed, skipped ends included;
 * live_from is lpos at the last trim, or past the end skipped by the first
 * record after it). Invariant: lpos - live_from <= capacity, so the live
 * span [live_from, lpos) never overlaps itself.
 * Writes are plain pwrite + fdatasync over blocks written at creation:
 * the file never grows, so fdatasync has no metadata to commit. Every
 * read, write and flush of the file goes through the I/O seam (io.h);
 * the rename and directory sync at creation do not.
 */
#include "osd/store/clog.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"

#define HDR_MAGIC "IOLCLOG1"
#define HDR_VERSION 1u
#define HDR_FIXED 32u   /* header block bytes covered by its crc */
#define REC_MAGIC 0x474f4c43u

struct store_clog {
	const struct store_io *io;
	int fd;
	uint64_t size;       /* file size; records live in [BLOCK, size) */
	uint64_t salt;
	uint64_t tail;       /* offset of the next record */
	uint64_t next_seq;
	uint64_t lpos;       /* logical bytes consumed since open */
	uint64_t live_from;  /* lpos at the last trim */
	uint8_t *buf;        /* aligned scratch for one record */
	size_t buf_cap;
};

__attribute__((format(printf, 3, 4)))
static void msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static uint64_t round_up(uint64_t v)
{
	return (v + STORE_CLOG_BLOCK - 1) & ~(uint64_t)(STORE_CLOG_BLOCK - 1);
}

uint64_t store_clog_need(size_t len)
{
	return round_up(STORE_CLOG_HDR + (uint64_t)len);
}

uint64_t store_clog_capacity(const struct store_clog *c)
{
	return c->size - STORE_CLOG_BLOCK;
}

uint64_t store_clog_used(const struct store_clog *c)
{
	return c->lpos - c->live_from;
}

static int grow_buf(struct store_clog *c, size_t need)
{
	if (need <= c->buf_cap)
		return 0;
	void *p;
	if (posix_memalign(&p, STORE_CLOG_BLOCK, need))
		return -ENOMEM;
	free(c->buf);
	c->buf = p;
	c->buf_cap = need;
	return 0;
}

static uint32_t hdr_block_crc(const uint8_t *h)
{
	return crc32c(0, h, HDR_FIXED);
}

/* Create path (as path.tmp first): header block, zeros, synced. */
static int create_ring(const struct store_io *io, const char *path, uint64_t size, char *err,
		       size_t errlen)
{
	char tmp[1024];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = io->open(io, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		msg(err, errlen, "commit log %s: %s", tmp, strerror(-fd));
		return fd;
	}
	int rc = -ENOMEM;
	size_t chunk = 1u << 20;
	uint8_t *z = calloc(1, chunk);
	if (!z)
		goto out_fd;
	uint8_t *h = z; /* the header block is the first 4 KiB of the first chunk */
	memcpy(h, HDR_MAGIC, 8);
	uint32_t u32 = htole32(HDR_VERSION);
	memcpy(h + 8, &u32, 4);
	u32 = htole32(STORE_CLOG_BLOCK);
	memcpy(h + 12, &u32, 4);
	uint64_t u64 = htole64(size);
	memcpy(h + 16, &u64, 8);
	uint64_t salt;
	if (getrandom(&salt, sizeof(salt), 0) != sizeof(salt)) {
		rc = -errno;
		goto out_buf;
	}
	memcpy(h + 24, &salt, 8);
	u32 = htole32(hdr_block_crc(h));
	memcpy(h + HDR_FIXED, &u32, 4);
	/* Real zeros, not fallocate: unwritten extents would be converted
	 * (a journal commit) on the first fdatasync over them. */
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		rc = store_io_pwrite_all(io, fd, z, n, off);
		if (rc)
			goto out_buf;
		if (off == 0)
			memset(z, 0, STORE_CLOG_BLOCK);
	}
	rc = io->fdatasync(io, fd);
	if (rc)
		goto out_buf;
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto out_buf;
	}
	char dcopy[1024];
	snprintf(dcopy, sizeof(dcopy), "%s", path);
	int dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	rc = 0;
out_buf:
	free(z);
out_fd:
	io->close(io, fd);
	if (rc) {
		unlink(tmp);
		msg(err, errlen, "commit log %s: %s", path, iol_strerror(rc));
	}
	return rc;
}

static int read_header(struct store_clog *c, const char *path, char *err, size_t errlen)
{
	uint8_t h[HDR_FIXED + 4];
	int rc = store_io_pread_all(c->io, c->fd, h, sizeof(h), 0);
	if (rc) {
		msg(err, errlen, "commit log %s: %s", path, "short header");
		return IOL_ECORRUPT;
	}
	uint32_t crc, ver, blk;
	uint64_t size;
	memcpy(&crc, h + HDR_FIXED, 4);
	memcpy(&ver, h + 8, 4);
	memcpy(&blk, h + 12, 4);
	memcpy(&size, h + 16, 8);
	memcpy(&c->salt, h + 24, 8);
	size = le64toh(size);
	struct stat st;
	if (memcmp(h, HDR_MAGIC, 8) != 0 || le32toh(crc) != hdr_block_crc(h) ||
	    le32toh(ver) != HDR_VERSION || le32toh(blk) != STORE_CLOG_BLOCK ||
	    size < STORE_CLOG_MIN_BYTES || size % STORE_CLOG_BLOCK || fstat(c->fd, &st) < 0 ||
	    (uint64_t)st.st_size < size) {
		msg(err, errlen, "commit log %s: %s", path, "bad header block (not a commit log?)");
		return IOL_ECORRUPT;
	}
	c->size = size;
	return 0;
}

int store_clog_open(const struct store_io *io, const char *path, uint64_t size_bytes,
		    struct store_clog **out, char *err, size_t errlen)
{
	io = store_io_or_default(io);
	size_bytes &= ~(uint64_t)(STORE_CLOG_BLOCK - 1);
	if (size_bytes < STORE_CLOG_MIN_BYTES)
		size_bytes = STORE_CLOG_MIN_BYTES;
	if (access(path, F_OK) != 0) {
		int rc = create_ring(io, path, size_bytes, err, errlen);
		if (rc)
			return rc;
	}
	struct store_clog *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->io = io;
	c->fd = io->open(io, path, O_RDWR | O_CLOEXEC, 0);
	if (c->fd < 0) {
		int rc = c->fd;
		msg(err, errlen, "commit log %s: %s", path, strerror(-rc));
		free(c);
		return rc;
	}
	int rc = read_header(c, path, err, errlen);
	if (rc == 0)
		rc = grow_buf(c, 64u << 10);
	if (rc) {
		io->close(io, c->fd);
		free(c->buf);
		free(c);
		return rc;
	}
	c->tail = STORE_CLOG_BLOCK;
	c->next_seq = 1;
	*out = c;
	return 0;
}

static uint32_t rec_crc(const struct store_clog *c, const uint8_t *hdr, const void *payload,
			size_t len)
{
	uint32_t crc = crc32c(0, &c->salt, sizeof(c->salt));
	crc = crc32c(crc, hdr + 8, STORE_CLOG_HDR - 8);
	return crc32c(crc, payload, len);
}

/*
 * Read the record at off if it is seq. Returns 1 with its payload in c->buf
 * (after the header) and *len; 0 when no such record is there (other
 * magic, seq or size: the writer did not put seq here); -EILSEQ when it
 * is seq's header but the record is torn; -errno on a read error.
 */
static int read_rec(struct store_clog *c, uint64_t off, uint64_t seq, size_t *len)
{
	if (off < STORE_CLOG_BLOCK || off + STORE_CLOG_HDR > c->size)
		return 0;
	uint8_t h[STORE_CLOG_HDR];
	int rc = store_io_pread_all(c->io, c->fd, h, sizeof(h), off);
	if (rc)
		return rc;
	uint32_t magic, crc, plen;
	uint64_t s;
	memcpy(&magic, h, 4);
	memcpy(&crc, h + 4, 4);
	memcpy(&s, h + 8, 8);
	memcpy(&plen, h + 16, 4);
	if (le32toh(magic) != REC_MAGIC || le64toh(s) != seq)
		return 0;
	plen = le32toh(plen);
	if (off + store_clog_need(plen) > c->size)
		return -EILSEQ;
	rc = grow_buf(c, store_clog_need(plen));
	if (rc)
		return rc;
	rc = store_io_pread_all(c->io, c->fd, c->buf, plen, off + STORE_CLOG_HDR);
	if (rc)
		return rc;
	if (rec_crc(c, h, c->buf, plen) != le32toh(crc))
		return -EILSEQ;
	*len = plen;
	return 1;
}

int store_clog_replay(struct store_clog *c, uint64_t after_seq, uint64_t after_off,
		      store_clog_replay_fn fn, void *arg)
{
	uint64_t seq = after_seq + 1;
	uint64_t off = after_off >= STORE_CLOG_BLOCK && after_off <= c->size ? after_off :
									       STORE_CLOG_BLOCK;
	int n = 0;
	for (;;) {
		size_t len = 0;
		int rc = read_rec(c, off, seq, &len);
		if (rc == 0 && off != STORE_CLOG_BLOCK) {
			off = STORE_CLOG_BLOCK; /* the writer wrapped */
			rc = read_rec(c, off, seq, &len);
		}
		if (rc == 0 || rc == -EILSEQ)
			break; /* the end: nothing more, or a torn last record */
		if (rc < 0)
			return rc;
		uint64_t end = off + store_clog_need(len);
		rc = fn(arg, seq, end, c->buf, len);
		if (rc)
			return rc;
		n++;
		seq++;
		off = end;
	}
	c->tail = off;
	c->next_seq = seq;
	c->lpos = c->live_from = 0;
	return n;
}

/* Offset the next record of need bytes starts at, and the bytes skipped
 * at the end to get there. */
static uint64_t place(const struct store_clog *c, uint64_t need, uint64_t *skip)
{
	if (c->tail + need <= c->size) {
		*skip = 0;
		return c->tail;
	}
	*skip = c->size - c->tail;
	return STORE_CLOG_BLOCK;
}

bool store_clog_fits(struct store_clog *c, size_t len)
{
	uint64_t need = store_clog_need(len), skip;
	if (need > store_clog_capacity(c))
		return false;
	place(c, need, &skip);
	if (store_clog_used(c) == 0)
		skip = 0; /* nothing live: the skipped end is in no one's way */
	return store_clog_used(c) + skip + need <= store_clog_capacity(c);
}

void store_clog_next(struct store_clog *c, size_t len, uint64_t *seq, uint64_t *end_off)
{
	uint64_t need = store_clog_need(len), skip;
	*seq = c->next_seq;
	*end_off = place(c, need, &skip) + need;
}

int store_clog_append(struct store_clog *c, const void *payload, size_t len)
{
	uint64_t need = store_clog_need(len), skip;
	uint64_t off = place(c, need, &skip);
	int rc = grow_buf(c, need);
	if (rc)
		return rc;
	uint8_t *h = c->buf;
	memset(h, 0, STORE_CLOG_HDR);
	uint32_t u32 = htole32(REC_MAGIC);
	memcpy(h, &u32, 4);
	uint64_t u64 = htole64(c->next_seq);
	memcpy(h + 8, &u64, 8);
	u32 = htole32((uint32_t)len);
	memcpy(h + 16, &u32, 4);
	memcpy(h + STORE_CLOG_HDR, payload, len);
	memset(h + STORE_CLOG_HDR + len, 0, need - STORE_CLOG_HDR - len);
	u32 = htole32(rec_crc(c, h, payload, len));
	memcpy(h + 4, &u32, 4);
	rc = store_io_pwrite_all(c->io, c->fd, h, need, off);
	if (rc == 0)
		rc = c->io->fdatasync(c->io, c->fd);
	if (rc)
		return rc;
	c->tail = off + need;
	c->next_seq++;
	if (c->lpos == c->live_from)
		c->live_from += skip; /* was empty: the skipped end is not live */
	c->lpos += skip + need;
	return 0;
}

void store_clog_trim_all(struct store_clog *c)
{
	c->live_from = c->lpos;
}

uint64_t store_clog_pos(const struct store_clog *c)
{
	return c->lpos;
}

void store_clog_trim_to(struct store_clog *c, uint64_t pos)
{
	if (pos > c->live_from && pos <= c->lpos)
		c->live_from = pos;
}

void store_clog_close(struct store_clog *c)
{
	if (!c)
		return;
	c->io->close(c->io, c->fd);
	free(c->buf);
	free(c);
}
