/*
 * snap.c — file snapshots: take a checkpoint and describe it, fetch one
 * from another member, serve one (contracts in snap.h).
 *
 * Invariants:
 *   - A checkpoint directory cp-<A>-<member> is complete once it has that
 *     name (taken into tmp-cp, renamed; fetched into in-cp-<A>-<member>,
 *     renamed after its files were verified and installed). Its files
 *     never change, and every member holding that name holds the same
 *     files: the name carries the member that took it (two members at the
 *     same A have different files).
 *   - A fetched file is trusted only when its size and crc32c match the
 *     descriptor; a partial file is resumed from its size.
 *
 * Threads: see snap.h. Nothing here touches the node: what a function
 * needs is in its job struct, so the loop can go on meanwhile.
 */
#include "meta/snap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <raft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "common/log.h"
#include "common/loop.h"

#define DESC_MAGIC 0x534c4f49u   /* "IOLS" little-endian */
#define CALL_TIMEOUT_MS 15000
#define READ_BUF (1u << 20)

/* ------------------------------------------------------------ helpers */

bool snap_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n < SNAP_NAME_MAX && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

void snap_desc_free(struct snap_desc *d)
{
	free(d->files);
	d->files = NULL;
	d->n_files = 0;
}

int snap_desc_copy(struct snap_desc *dst, const struct snap_desc *src)
{
	*dst = *src;
	dst->files = NULL;
	if (src->n_files) {
		dst->files = malloc(src->n_files * sizeof(*dst->files));
		if (!dst->files)
			return -ENOMEM;
		memcpy(dst->files, src->files, src->n_files * sizeof(*dst->files));
	}
	return 0;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int snap_desc_encode(const struct snap_desc *d, void **base, size_t *len)
{
	Iolake__Meta__SnapshotDescriptor m = IOLAKE__META__SNAPSHOT_DESCRIPTOR__INIT;
	Iolake__Meta__SnapshotFile *fs = calloc(d->n_files ? d->n_files : 1, sizeof(*fs));
	Iolake__Meta__SnapshotFile **fp = calloc(d->n_files ? d->n_files : 1, sizeof(*fp));
	if (!fs || !fp) {
		free(fs);
		free(fp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->n_files; i++) {
		iolake__meta__snapshot_file__init(&fs[i]);
		fs[i].name = (char *)d->files[i].name;
		fs[i].size = d->files[i].size;
		fs[i].crc32c = d->files[i].crc32c;
		fp[i] = &fs[i];
	}
	m.member_id = d->member_id;
	m.member_addr = (char *)d->member_addr;
	m.applied_index = d->applied_index;
	m.checkpoint = (char *)d->checkpoint;
	m.files = fp;
	m.n_files = d->n_files;
	m.bytes = d->bytes;
	size_t pb = iolake__meta__snapshot_descriptor__get_packed_size(&m);
	size_t total = (8 + pb + 7) & ~(size_t)7;
	uint8_t *b = raft_malloc(total);
	int rc = -ENOMEM;
	if (b) {
		memset(b, 0, total);
		put_le32(b, DESC_MAGIC);
		put_le32(b + 4, (uint32_t)pb);
		iolake__meta__snapshot_descriptor__pack(&m, b + 8);
		*base = b;
		*len = total;
		rc = 0;
	}
	free(fs);
	free(fp);
	return rc;
}

int snap_desc_decode(const void *base, size_t len, struct snap_desc *out)
{
	const uint8_t *b = base;
	memset(out, 0, sizeof(*out));
	if (len < 8 || get_le32(b) != DESC_MAGIC || get_le32(b + 4) > len - 8)
		return IOL_ECORRUPT;
	Iolake__Meta__SnapshotDescriptor *m =
		iolake__meta__snapshot_descriptor__unpack(NULL, get_le32(b + 4), b + 8);
	if (!m)
		return IOL_ECORRUPT;
	int rc = IOL_ECORRUPT;
	if (!snap_name_ok(m->checkpoint) || strlen(m->member_addr) >= META_NODE_ADDR_MAX ||
	    m->n_files > SNAP_FILES_MAX || !m->applied_index)
		goto out;
	out->files = calloc(m->n_files ? m->n_files : 1, sizeof(*out->files));
	if (!out->files) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->n_files; i++) {
		if (!snap_name_ok(m->files[i]->name))
			goto out;
		snprintf(out->files[i].name, SNAP_NAME_MAX, "%s", m->files[i]->name);
		out->files[i].size = m->files[i]->size;
		out->files[i].crc32c = m->files[i]->crc32c;
	}
	out->n_files = m->n_files;
	out->member_id = m->member_id;
	snprintf(out->member_addr, sizeof(out->member_addr), "%s", m->member_addr);
	out->applied_index = m->applied_index;
	snprintf(out->checkpoint, sizeof(out->checkpoint), "%s", m->checkpoint);
	out->bytes = m->bytes;
	rc = 0;
out:
	if (rc)
		snap_desc_free(out);
	iolake__meta__snapshot_descriptor__free_unpacked(m, NULL);
	return rc;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) ? -errno : 0;
	close(fd);
	return rc;
}

/* crc32c of fd's first size bytes; *read_bytes counts them. */
static int crc_fd(int fd, uint64_t size, uint32_t *crc, uint64_t *read_bytes)
{
	uint8_t *buf = malloc(READ_BUF);
	if (!buf)
		return -ENOMEM;
	uint32_t c = 0;
	uint64_t off = 0;
	int rc = 0;
	while (off < size) {
		size_t want = size - off < READ_BUF ? (size_t)(size - off) : READ_BUF;
		ssize_t k = pread(fd, buf, want, (off_t)off);
		if (k <= 0) {
			rc = k < 0 ? -errno : -EIO;
			break;
		}
		c = crc32c(c, buf, (size_t)k);
		off += (uint64_t)k;
	}
	free(buf);
	*crc = c;
	if (read_bytes)
		*read_bytes += off;
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_file *)a)->name, ((const struct snap_file *)b)->name);
}

/* ---------------------------------------------------------- take */

/* The files of checkpoint dir cp, sorted, with sizes and crc32c. */
static int list_files(const char *cp, const struct snap_desc *prev, struct snap_desc *d,
		      uint64_t *crc_bytes)
{
	DIR *dh = opendir(cp);
	if (!dh)
		return -errno;
	size_t cap = 64;
	d->files = malloc(cap * sizeof(*d->files));
	d->n_files = 0;
	d->bytes = 0;
	int rc = d->files ? 0 : -ENOMEM;
	struct dirent *e;
	while (rc == 0 && (e = readdir(dh))) {
		if (!snap_name_ok(e->d_name))
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", cp, e->d_name);
		struct stat st;
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (d->n_files == cap) {
			struct snap_file *nf = realloc(d->files, 2 * cap * sizeof(*nf));
			if (!nf) {
				rc = -ENOMEM;
				break;
			}
			d->files = nf;
			cap *= 2;
		}
		if (d->n_files >= SNAP_FILES_MAX) {
			rc = -E2BIG;
			break;
		}
		struct snap_file *f = &d->files[d->n_files];
		memcpy(f->name, e->d_name, strlen(e->d_name) + 1);   /* fits: snap_name_ok */
		f->size = (uint64_t)st.st_size;
		bool known = false;
		/* SST files are immutable and their numbers never reused. */
		size_t nl = strlen(f->name);
		if (prev && nl > 4 && !strcmp(f->name + nl - 4, ".sst"))
			for (size_t i = 0; i < prev->n_files && !known; i++)
				if (!strcmp(prev->files[i].name, f->name) && prev->files[i].size == f->size) {
					f->crc32c = prev->files[i].crc32c;
					known = true;
				}
		if (!known) {
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				rc = -errno;
				break;
			}
			rc = crc_fd(fd, f->size, &f->crc32c, crc_bytes);
			close(fd);
		}
		d->bytes += f->size;
		d->n_files++;
	}
	closedir(dh);
	if (rc == 0)
		qsort(d->files, d->n_files, sizeof(*d->files), name_cmp);
	else
		snap_desc_free(d);
	return rc;
}

static bool pinned(const struct snap_take_job *j, const char *name)
{
	for (size_t i = 0; i < j->n_pinned; i++)
		if (!strcmp(j->pinned[i], name))
			return true;
	return false;
}

/* Keep the newest SNAP_KEEP cp-*, the pinned ones and in-* newer than A;
 * drop the rest (and a stray tmp-cp). */
static void prune(const struct snap_take_job *j, uint64_t a)
{
	DIR *dh = opendir(j->dir);
	if (!dh)
		return;
	uint64_t keep[SNAP_KEEP] = { 0 };
	struct dirent *e;
	while ((e = readdir(dh))) {
		unsigned long long v;
		char tail;
		unsigned long long who;
		if (sscanf(e->d_name, "cp-%llu-%llu%c", &v, &who, &tail) != 2)
			continue;
		for (int i = 0; i < SNAP_KEEP; i++)
			if (v > keep[i]) {
				memmove(&keep[i + 1], &keep[i], (SNAP_KEEP - 1 - (size_t)i) * sizeof(keep[0]));
				keep[i] = v;
				break;
			} else if (v == keep[i]) {
				break;
			}
	}
	rewinddir(dh);
	while ((e = readdir(dh))) {
		unsigned long long v, who;
		char tail, path[1024];
		bool drop = false;
		if (sscanf(e->d_name, "cp-%llu-%llu%c", &v, &who, &tail) == 2) {
			drop = v != a && !pinned(j, e->d_name);
			for (int i = 0; i < SNAP_KEEP; i++)
				if (keep[i] == v)
					drop = false;
		} else if (sscanf(e->d_name, "in-cp-%llu-%llu%c", &v, &who, &tail) == 2) {
			drop = v <= a;
		}
		if (drop) {
			snprintf(path, sizeof(path), "%s/%s", j->dir, e->d_name);
			rm_rf(path);
		}
	}
	closedir(dh);
}

int snap_take(struct snap_take_job *j)
{
	uint64_t t0 = loop_now_ns();
	char tmp[700], final[700];
	memset(&j->desc, 0, sizeof(j->desc));
	if (mkdir(j->dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s/tmp-cp", j->dir);
	rm_rf(tmp);
	int rc = meta_state_checkpoint(j->state, tmp);
	uint64_t a = 0;
	if (rc == 0)
		rc = meta_state_checkpoint_applied(tmp, &a);
	if (rc == 0 && a == 0)
		rc = -EIO;   /* an empty state: nothing to snapshot */
	if (rc) {
		rm_rf(tmp);
		return rc;
	}
	snprintf(final, sizeof(final), "%s/cp-%llu-%llu", j->dir, (unsigned long long)a,
		 (unsigned long long)j->member_id);
	struct stat st;
	if (stat(final, &st) == 0) {
		rm_rf(tmp);   /* the same state checkpointed before: reuse it */
	} else if (rename(tmp, final)) {
		rc = -errno;
		rm_rf(tmp);
		return rc;
	}
	fsync_path(j->dir);
	rc = list_files(final, j->prev, &j->desc, &j->crc_bytes);
	if (rc)
		return rc;
	j->desc.member_id = j->member_id;
	snprintf(j->desc.member_addr, sizeof(j->desc.member_addr), "%s", j->member_addr);
	j->desc.applied_index = a;
	snprintf(j->desc.checkpoint, sizeof(j->desc.checkpoint), "cp-%llu-%llu", (unsigned long long)a,
		 (unsigned long long)j->member_id);
	prune(j, a);
	j->elapsed_ns = loop_now_ns() - t0;
	return 0;
}

bool snap_local_complete(const char *dir, const struct snap_desc *d, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, d->checkpoint);
	for (size_t i = 0; i < d->n_files; i++) {
		char p[1024];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", path, d->files[i].name);
		if (stat(p, &st) || (uint64_t)st.st_size != d->files[i].size)
			return false;
	}
	return d->n_files > 0;
}

void snap_adopt(const char *dir, const struct snap_desc *d)
{
	char from[700], to[700];
	snprintf(from, sizeof(from), "%s/in-%s", dir, d->checkpoint);
	snprintf(to, sizeof(to), "%s/%s", dir, d->checkpoint);
	struct stat st;
	if (stat(to, &st) == 0)
		rm_rf(from);
	else if (rename(from, to) == 0)
		fsync_path(dir);
}

/* ---------------------------------------------------------- fetch */

struct fetcher {
	struct snap_fetch_job *j;
	struct loop_thread lt;
	struct loop_work start;
	uv_sem_t done;
	int rc;
	struct rpc_channel *ch;
	uv_timer_t timer;             /* backoff */
	uv_timer_t tick;              /* cancel flag and deadline, every SNAP_CANCEL_POLL_MS */
	int open_timers;              /* the caller is woken once both are closed */
	size_t addr_i;
	unsigned fails;               /* calls failed in a row */
	uint64_t backoff_ms;
	uint64_t deadline_ms;
	size_t file_i;
	int fd;
	uint64_t off;
	unsigned crc_failures;
	unsigned src_fails[META_NODE_MAX_PEERS + 1];   /* per source, since the last chunk */
	bool any_gone;                /* one of those said it lacks the checkpoint */
	bool finished;
};

static void fetch_step(struct fetcher *f);

static void fetch_timer_closed(uv_handle_t *h)
{
	struct fetcher *f = h->data;
	if (--f->open_timers == 0)
		uv_sem_post(&f->done);
}

static void fetch_finish(struct fetcher *f, int rc)
{
	if (f->finished)
		return;
	f->finished = true;
	f->rc = rc;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	/* A call in flight is answered RPC_CANCELLED here; on_chunk then
	 * sees f->finished. */
	if (f->ch)
		rpc_channel_close(f->ch);
	f->ch = NULL;
	uv_close((uv_handle_t *)&f->timer, fetch_timer_closed);
	uv_close((uv_handle_t *)&f->tick, fetch_timer_closed);
}

/* The deadline holds even while a call waits for its own timeout, and
 * the owner may cancel (a member closing during an install). */
static void on_fetch_tick(uv_timer_t *t)
{
	struct fetcher *f = t->data;
	if (f->j->cancel && atomic_load(f->j->cancel))
		fetch_finish(f, -ECANCELED);
	else if (loop_now_ms() >= f->deadline_ms)
		fetch_finish(f, -ETIMEDOUT);
}

static void fetch_open_channel(struct fetcher *f)
{
	struct rpc_channel_opts co = { .connect_timeout_ms = 2000, .backoff_max_ms = 1000,
				       .max_message_bytes = SNAP_CHUNK_BYTES + (64u << 10) };
	f->ch = rpc_channel_open(&f->lt.loop, f->j->addrs[f->addr_i], &co);
}

static void on_backoff(uv_timer_t *t)
{
	struct fetcher *f = t->data;
	fetch_open_channel(f);
	fetch_step(f);
}

/* The source failed us: the next one, and a pause after a whole round.
 * gone: it answered that it does not hold the checkpoint (or the group). */
static void fetch_fail_over_why(struct fetcher *f, const char *why, bool gone)
{
	LOG_WARN("snapshot fetch: source failed", "addr=%s why=%s", f->j->addrs[f->addr_i],
		 LOG_Q(why));
	if (f->ch)
		rpc_channel_close(f->ch);
	f->ch = NULL;
	if (loop_now_ms() >= f->deadline_ms) {
		fetch_finish(f, -ETIMEDOUT);
		return;
	}
	/* Gone for good when every source failed SNAP_GONE_ROUNDS times since
	 * the last chunk and one said it lacks the checkpoint: a dead source
	 * among live ones that pruned it must not keep us here until the
	 * deadline (the caller asks them all for a newer one instead). */
	f->src_fails[f->addr_i]++;
	f->any_gone |= gone;
	if (f->j->give_up_when_gone && f->any_gone) {
		unsigned least = UINT32_MAX;
		for (size_t i = 0; i < f->j->n_addrs; i++)
			least = f->src_fails[i] < least ? f->src_fails[i] : least;
		if (least >= SNAP_GONE_ROUNDS) {
			fetch_finish(f, -ENOENT);
			return;
		}
	}
	f->addr_i = (f->addr_i + 1) % f->j->n_addrs;
	f->fails++;
	uint64_t wait = 0;
	if (f->fails % f->j->n_addrs == 0) {
		wait = f->backoff_ms;
		f->backoff_ms = f->backoff_ms * 2 > 2000 ? 2000 : f->backoff_ms * 2;
	}
	uv_timer_start(&f->timer, on_backoff, wait, 0);
}

static void fetch_fail_over(struct fetcher *f, const char *why)
{
	fetch_fail_over_why(f, why, false);
}

static void on_chunk(void *ud, const struct rpc_result *res)
{
	struct fetcher *f = ud;
	if (f->finished)
		return;
	const struct snap_file *sf = &f->j->desc->files[f->file_i];
	if (res->status != RPC_OK) {
		fetch_fail_over_why(f, res->message, res->status == RPC_NOT_FOUND);
		return;
	}
	const Iolake__Meta__FetchSnapshotResponse *m =
		(const Iolake__Meta__FetchSnapshotResponse *)res->resp;
	size_t len = res->payload.buf ? res->payload.len : 0;
	if (m->status != IOLAKE__META__STATUS__STATUS_OK || m->file_size != sf->size || len == 0 ||
	    len > sf->size - f->off) {
		bool gone = m->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		fetch_fail_over_why(f, gone ? "checkpoint gone there"
					    : "answer does not match the descriptor", gone);
		return;
	}
	memset(f->src_fails, 0, sizeof(f->src_fails));
	f->any_gone = false;
	const uint8_t *p = buf_slice_data(&res->payload);
	size_t done = 0;
	while (done < len) {
		ssize_t k = pwrite(f->fd, p + done, len - done, (off_t)(f->off + done));
		if (k <= 0) {
			LOG_ERROR("snapshot fetch: write failed", "file=%s err=%s", sf->name,
				  strerror(k < 0 ? errno : EIO));
			fetch_finish(f, -EIO);
			return;
		}
		done += (size_t)k;
	}
	f->off += len;
	f->j->fetched_bytes += len;
	if (f->j->m_fetch_bytes)
		metrics_counter_add(f->j->m_fetch_bytes, len);
	f->fails = 0;
	f->backoff_ms = 100;
	fetch_step(f);
}

/* Go on with the current file: open it, check what is there, ask for the
 * next chunk, or move to the next file. */
static void fetch_step(struct fetcher *f)
{
	const struct snap_fetch_job *j = f->j;
	while (f->file_i < j->desc->n_files) {
		const struct snap_file *sf = &j->desc->files[f->file_i];
		if (f->fd < 0) {
			char p[1024];
			snprintf(p, sizeof(p), "%s/%s", j->path, sf->name);
			f->fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
			struct stat st;
			if (f->fd < 0 || fstat(f->fd, &st)) {
				fetch_finish(f, -EIO);
				return;
			}
			f->off = (uint64_t)st.st_size;
			if (f->off > sf->size) {   /* not ours to resume */
				if (ftruncate(f->fd, 0)) {
					fetch_finish(f, -EIO);
					return;
				}
				f->off = 0;
			}
		}
		if (f->off < sf->size) {
			Iolake__Meta__FetchSnapshotRequest q = IOLAKE__META__FETCH_SNAPSHOT_REQUEST__INIT;
			q.checkpoint = (char *)j->desc->checkpoint;
			q.file = (char *)sf->name;
			q.offset = f->off;
			q.max_bytes = j->chunk_bytes;
			q.group = j->group;
			struct rpc_call_opts o = { .timeout_ms = CALL_TIMEOUT_MS };
			rpc_call(f->ch, META_SERVICE, META_M_FETCH_SNAPSHOT, &q.base, NULL, &o, on_chunk, f);
			return;
		}
		uint32_t crc;
		if (crc_fd(f->fd, sf->size, &crc, NULL) || crc != sf->crc32c) {
			/* Bad bytes on disk, or a source that is: fetch it again
			 * from the next one. */
			LOG_WARN("snapshot fetch: file does not match its crc32c: fetching it again",
				 "file=%s", sf->name);
			if (++f->crc_failures > 3 * j->n_addrs || ftruncate(f->fd, 0)) {
				fetch_finish(f, -EIO);
				return;
			}
			f->off = 0;
			if (f->crc_failures > 1) {
				fetch_fail_over(f, "crc32c mismatch");
				return;
			}
			continue;
		}
		int rc = fsync(f->fd) ? -errno : 0;
		close(f->fd);
		f->fd = -1;
		if (rc) {
			fetch_finish(f, rc);
			return;
		}
		f->file_i++;
	}
	fsync_path(j->path);
	fetch_finish(f, 0);
}

static void fetch_start(struct loop_work *w)
{
	struct fetcher *f = container_of(w, struct fetcher, start);
	uv_timer_init(&f->lt.loop, &f->timer);
	f->timer.data = f;
	uv_timer_init(&f->lt.loop, &f->tick);
	f->tick.data = f;
	f->open_timers = 2;
	uv_timer_start(&f->tick, on_fetch_tick, SNAP_CANCEL_POLL_MS, SNAP_CANCEL_POLL_MS);
	fetch_open_channel(f);
	if (!f->ch) {
		fetch_finish(f, -ENOMEM);
		return;
	}
	fetch_step(f);
}

int snap_fetch(struct snap_fetch_job *j)
{
	if (!j->n_addrs || j->n_addrs > META_NODE_MAX_PEERS + 1)
		return -EINVAL;
	if (!j->chunk_bytes || j->chunk_bytes > SNAP_CHUNK_BYTES)
		j->chunk_bytes = SNAP_CHUNK_BYTES;
	if (mkdir(j->dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(j->path, sizeof(j->path), "%s/in-%s", j->dir, j->desc->checkpoint);
	if (mkdir(j->path, 0700) && errno != EEXIST)
		return -errno;
	struct fetcher *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->j = j;
	f->fd = -1;
	f->backoff_ms = 100;
	f->deadline_ms = loop_now_ms() + (j->timeout_ms ? j->timeout_ms : 300000);
	uv_sem_init(&f->done, 0);
	int rc = loop_thread_start(&f->lt, "meta-snapfetch");
	if (rc == 0) {
		rc = loop_queue_post(&f->lt.queue, &f->start, fetch_start);
		if (rc == 0) {
			uv_sem_wait(&f->done);
			rc = f->rc;
		}
		loop_thread_stop(&f->lt);
	}
	uv_sem_destroy(&f->done);
	free(f);
	return rc;
}

/* ---------------------------------------------------------- newest */

struct newest {
	struct snap_newest_job *j;
	struct loop_thread lt;
	struct loop_work start;
	uv_sem_t done;
	struct rpc_channel *ch[META_NODE_MAX_PEERS + 1];
	uv_timer_t tick;              /* the cancel flag */
	size_t waiting;
	int rc;
	bool finished;
};

static void newest_tick_closed(uv_handle_t *h)
{
	struct newest *w = h->data;
	uv_sem_post(&w->done);
}

static void newest_finish(struct newest *w)
{
	if (w->finished)
		return;
	w->finished = true;
	/* Calls still out are answered RPC_CANCELLED here (on_newest). */
	for (size_t i = 0; i < w->j->n_addrs; i++)
		if (w->ch[i]) {
			struct rpc_channel *ch = w->ch[i];
			w->ch[i] = NULL;
			rpc_channel_close(ch);
		}
	uv_close((uv_handle_t *)&w->tick, newest_tick_closed);
}

static void on_newest_tick(uv_timer_t *t)
{
	struct newest *w = t->data;
	if (w->j->cancel && atomic_load(w->j->cancel)) {
		w->rc = -ECANCELED;
		newest_finish(w);
	}
}

static void on_newest(void *ud, const struct rpc_result *res)
{
	struct newest *w = ud;
	struct snap_newest_job *j = w->j;
	const Iolake__Meta__FetchSnapshotResponse *m =
		(const Iolake__Meta__FetchSnapshotResponse *)res->resp;
	struct snap_desc d;
	if (res->status == RPC_OK && m->status == IOLAKE__META__STATUS__STATUS_OK &&
	    res->payload.buf && snap_desc_decode(buf_slice_data(&res->payload), res->payload.len,
						 &d) == 0) {
		if (d.applied_index >= j->min_applied &&
		    (!j->found || d.applied_index > j->out.applied_index)) {
			if (j->found)
				snap_desc_free(&j->out);
			j->out = d;   /* moved */
			j->found = true;
		} else {
			snap_desc_free(&d);
		}
	}
	if (--w->waiting == 0)
		newest_finish(w);
}

static void newest_start(struct loop_work *lw)
{
	struct newest *w = container_of(lw, struct newest, start);
	struct snap_newest_job *j = w->j;
	Iolake__Meta__FetchSnapshotRequest q = IOLAKE__META__FETCH_SNAPSHOT_REQUEST__INIT;
	q.checkpoint = "";
	q.file = "";
	q.newest = true;
	q.group = j->group;
	struct rpc_call_opts o = { .timeout_ms = CALL_TIMEOUT_MS };
	struct rpc_channel_opts co = { .connect_timeout_ms = 2000 };
	uv_timer_init(&w->lt.loop, &w->tick);
	w->tick.data = w;
	uv_timer_start(&w->tick, on_newest_tick, SNAP_CANCEL_POLL_MS, SNAP_CANCEL_POLL_MS);
	for (size_t i = 0; i < j->n_addrs; i++)
		w->ch[i] = rpc_channel_open(&w->lt.loop, j->addrs[i], &co);
	w->waiting = j->n_addrs;
	for (size_t i = 0; i < j->n_addrs; i++) {
		if (!w->ch[i]) {
			if (--w->waiting == 0)
				newest_finish(w);
			continue;
		}
		rpc_call(w->ch[i], META_SERVICE, META_M_FETCH_SNAPSHOT, &q.base, NULL, &o, on_newest,
			 w);
	}
}

int snap_newest(struct snap_newest_job *j)
{
	if (!j->n_addrs || j->n_addrs > META_NODE_MAX_PEERS + 1)
		return -EINVAL;
	j->found = false;
	struct newest *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->j = j;
	uv_sem_init(&w->done, 0);
	int rc = loop_thread_start(&w->lt, "meta-snapnewest");
	if (rc == 0) {
		rc = loop_queue_post(&w->lt.queue, &w->start, newest_start);
		if (rc == 0) {
			uv_sem_wait(&w->done);
			rc = w->rc;
		}
		loop_thread_stop(&w->lt);
	}
	uv_sem_destroy(&w->done);
	free(w);
	if (rc == -ECANCELED && j->found) {
		snap_desc_free(&j->out);
		j->found = false;
	}
	if (rc == 0 && !j->found)
		rc = -ENOENT;
	return rc;
}

int snap_serve_newest(const char *dir, const struct snap_desc *last, struct rpc_req *r)
{
	char path[700];
	Iolake__Meta__FetchSnapshotResponse resp = IOLAKE__META__FETCH_SNAPSHOT_RESPONSE__INIT;
	void *base = NULL;
	size_t len = 0;
	if (!last->applied_index || !snap_local_complete(dir, last, path, sizeof(path)) ||
	    snap_desc_encode(last, &base, &len)) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return -ENOENT;
	}
	struct buf *b = buf_new(len);
	if (!b) {
		raft_free(base);
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return -ENOMEM;
	}
	memcpy(b->data, base, len);
	b->len = len;
	raft_free(base);
	resp.status = IOLAKE__META__STATUS__STATUS_OK;
	struct buf_slice p = { .buf = b, .off = 0, .len = len };
	rpc_respond(r, &resp.base, &p);
	buf_unref(b);
	return 0;
}

/* ---------------------------------------------------------- serve */

struct serve {
	uv_work_t w;
	struct rpc_req *r;
	char path[1024];
	uint64_t offset;
	uint32_t max;
	int rc;                       /* 0, -ENOENT (gone), -ERANGE, -errno */
	uint64_t size;
	struct buf *data;
};

static void serve_work(uv_work_t *w)
{
	struct serve *s = w->data;
	int fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		s->rc = -errno;
		return;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		s->rc = -errno;
		close(fd);
		return;
	}
	s->size = (uint64_t)st.st_size;
	if (s->offset >= s->size) {
		s->rc = -ERANGE;
		close(fd);
		return;
	}
	size_t len = s->size - s->offset < s->max ? (size_t)(s->size - s->offset) : s->max;
	s->data = buf_new(len);
	if (!s->data) {
		s->rc = -ENOMEM;
		close(fd);
		return;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t k = pread(fd, s->data->data + done, len - done, (off_t)(s->offset + done));
		if (k <= 0) {
			s->rc = k < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)k;
	}
	s->data->len = done;
	close(fd);
}

static void serve_after(uv_work_t *w, int status)
{
	struct serve *s = w->data;
	Iolake__Meta__FetchSnapshotResponse resp = IOLAKE__META__FETCH_SNAPSHOT_RESPONSE__INIT;
	if (status == 0 && s->rc == 0) {
		resp.status = IOLAKE__META__STATUS__STATUS_OK;
		resp.file_size = s->size;
		struct buf_slice p = { .buf = s->data, .off = 0, .len = s->data->len };
		rpc_respond(s->r, &resp.base, &p);
	} else if (status == 0 && s->rc == -ENOENT) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(s->r, &resp.base, NULL);
	} else if (status == 0 && s->rc == -ERANGE) {
		resp.status = IOLAKE__META__STATUS__STATUS_INVALID;
		resp.file_size = s->size;
		rpc_respond(s->r, &resp.base, NULL);
	} else {
		rpc_fail(s->r, RPC_INTERNAL, "read failed: %s",
			 strerror(status ? EIO : -s->rc));
	}
	buf_unref(s->data);
	free(s);
}

void snap_serve_fetch(uv_loop_t *loop, const char *dir, struct rpc_req *r)
{
	const Iolake__Meta__FetchSnapshotRequest *q =
		(const Iolake__Meta__FetchSnapshotRequest *)rpc_req_msg(r);
	if (!snap_name_ok(q->checkpoint) || !snap_name_ok(q->file) ||
	    strncmp(q->checkpoint, "cp-", 3) != 0) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "bad checkpoint or file name");
		return;
	}
	struct serve *s = calloc(1, sizeof(*s));
	if (!s) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	s->r = r;
	snprintf(s->path, sizeof(s->path), "%s/%s/%s", dir, q->checkpoint, q->file);
	s->offset = q->offset;
	s->max = q->max_bytes && q->max_bytes < SNAP_CHUNK_BYTES ? q->max_bytes : SNAP_CHUNK_BYTES;
	s->w.data = s;
	if (uv_queue_work(loop, &s->w, serve_work, serve_after)) {
		free(s);
		rpc_fail(r, RPC_INTERNAL, "cannot queue the read");
	}
}
