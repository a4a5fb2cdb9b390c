/*
 * fault_io.c — the fault-injecting, power-cut-simulating store_io
 * (fault_io.h says what it models and what not).
 *
 * Owns: one mutex over everything below; per file opened through it (by
 * device and inode, so renames and reopens find it) a record with its own
 * buffered fd, a write counter and the list of unflushed writes with the
 * bytes each overwrote (a write is applied to the file at once: reads see
 * it, as they would the page cache); the device WRITEs in flight; the
 * RocksDB snapshot of each database directory seen by kv_durable.
 * Invariant: a file's content is its durable content with its unflushed
 * writes applied in order; undoing them newest first restores any earlier
 * state, per sector. A cut runs entirely under the mutex, so it falls
 * between two calls of any thread. The device engine runs on its loop:
 * a uv_idle turn completes the requests whose random turn count ran out.
 * Does not: model anything the seam does not carry (fault_io.h).
 */
#include "tests/lib/fault_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/loop.h"

#define SECTOR 4096u
#define MAX_DBS 8

/* A write not yet covered by a flush. */
struct pw {
	uint64_t seq;          /* the file's write count when applied */
	uint64_t off;
	size_t len;
	uint8_t *pre;          /* the bytes it overwrote (zeros past the end) */
	struct pw *next;
};

/* A device WRITE submitted and not completed: the cut may keep sectors
 * of it. */
struct infl {
	const uint8_t *buf;
	uint64_t off;
	uint32_t len;
	struct infl *prev, *next;
};

struct tfile {
	dev_t dev;
	ino_t ino;
	int fd;                /* ours: read-write, buffered */
	uint64_t seq;          /* writes applied so far */
	struct pw *head, *tail;
	struct infl *infl;
	struct tfile *next;
};

struct handle {
	int fd;                /* the store's */
	struct tfile *t;
	struct handle *next;
};

struct db_snap {
	char dir[512];         /* the database directory */
	char snap[600];        /* its last snapshot ("" none yet) */
};

struct fault_io {
	struct store_io io;    /* io.impl == this */
	struct fault_io_opts o;
	char snap_dir[512];
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* held calls wait here */
	uint64_t rng;
	bool dead;             /* cut, not yet recovered */
	uint64_t events;
	uint64_t cut_at;       /* event number of an armed cut (0: none) */
	uint32_t keep_permille;
	uint64_t calls[FAULT_IO_NCALLS];
	uint64_t fail_at[FAULT_IO_NCALLS];
	int fail_err[FAULT_IO_NCALLS];
	bool hold[FAULT_IO_NCALLS];
	struct tfile *files;
	struct handle *handles;
	struct db_snap dbs[MAX_DBS];
	int ndbs;
	uint64_t snap_n;
	struct fault_io_stats st;
};

static struct fault_io *of(const struct store_io *io)
{
	return io->impl;
}

/* splitmix64; under mu. */
static uint64_t rnd(struct fault_io *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Under mu: a call of kind starts. Waits while it is held (wait true),
 * then 0, an injected -errno, or -EIO when the power is off. */
static int begin(struct fault_io *f, enum fault_io_call call, bool wait)
{
	while (wait && f->hold[call] && !f->dead)
		pthread_cond_wait(&f->cv, &f->mu);
	f->calls[call]++;
	if (f->fail_at[call] && f->calls[call] == f->fail_at[call]) {
		f->fail_at[call] = 0;
		f->st.injected++;
		return -f->fail_err[call];
	}
	return f->dead ? -EIO : 0;
}

/* Under mu: one more event; true when it is the armed cut. */
static bool event_cuts(struct fault_io *f)
{
	f->events++;
	f->st.events++;
	return f->cut_at && f->events == f->cut_at;
}

static struct tfile *file_of(struct fault_io *f, int fd)
{
	for (struct handle *h = f->handles; h; h = h->next)
		if (h->fd == fd)
			return h->t;
	return NULL;
}

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *b = buf;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, b + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	memset(b + got, 0, len - got); /* past the end: zeros */
	return 0;
}

static int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *b = buf;
	while (len) {
		ssize_t n = pwrite(fd, b, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		b += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Under mu: apply a write to t, remembering what it overwrote. */
static int apply_write(struct tfile *t, const void *buf, size_t len, uint64_t off)
{
	struct pw *w = calloc(1, sizeof(*w));
	if (!w || !(w->pre = malloc(len ? len : 1))) {
		free(w);
		return -ENOMEM;
	}
	int rc = read_full(t->fd, w->pre, len, off);
	if (rc == 0)
		rc = write_full(t->fd, buf, len, off);
	if (rc) {
		free(w->pre);
		free(w);
		return rc;
	}
	w->seq = ++t->seq;
	w->off = off;
	w->len = len;
	if (t->tail)
		t->tail->next = w;
	else
		t->head = w;
	t->tail = w;
	return 0;
}

/* Under mu: the writes of t up to seq upto are durable. */
static void flushed(struct tfile *t, uint64_t upto)
{
	while (t->head && t->head->seq <= upto) {
		struct pw *w = t->head;
		t->head = w->next;
		free(w->pre);
		free(w);
	}
	if (!t->head)
		t->tail = NULL;
}

/* ------------------------------------------------------------ the cut */

struct sent {
	uint64_t sector;
	uint64_t order;        /* position in the file's write list */
	struct pw *w;
};

static int sent_cmp(const void *a, const void *b)
{
	const struct sent *x = a, *y = b;
	if (x->sector != y->sector)
		return x->sector < y->sector ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool keep(struct fault_io *f)
{
	return rnd(f) % 1000 < f->keep_permille;
}

/* Under mu: each sector of t's unflushed writes ends up holding the bytes
 * after 0 (dropped), or after a random one of, the writes to it. */
static void revert(struct fault_io *f, struct tfile *t)
{
	size_t n = 0, i = 0;
	uint64_t order = 0;
	for (struct pw *w = t->head; w; w = w->next)
		if (w->len)
			n += (size_t)((w->off + w->len - 1) / SECTOR - w->off / SECTOR + 1);
	if (n == 0)
		return;
	struct sent *e = malloc(n * sizeof(*e));
	uint8_t *sec = malloc(SECTOR);
	if (!e || !sec)
		abort(); /* test code: no way to simulate honestly */
	for (struct pw *w = t->head; w; w = w->next, order++)
		for (uint64_t s = w->off / SECTOR; w->len && s <= (w->off + w->len - 1) / SECTOR; s++)
			e[i++] = (struct sent){ s, order, w };
	qsort(e, n, sizeof(*e), sent_cmp);
	for (size_t g = 0; g < n;) {
		size_t h = g;
		while (h < n && e[h].sector == e[g].sector)
			h++;
		size_t cnt = h - g;
		/* k writes of this sector stay (in write order); undo the rest,
		 * newest first. */
		size_t k = keep(f) ? 1 + (size_t)(rnd(f) % cnt) : 0;
		if (k)
			f->st.sectors_kept++;
		else
			f->st.sectors_dropped++;
		if (k < cnt) {
			uint64_t base = e[g].sector * SECTOR, lo = UINT64_MAX, hi = 0;
			if (read_full(t->fd, sec, SECTOR, base))
				abort();
			for (size_t j = h; j-- > g + k;) {
				struct pw *w = e[j].w;
				uint64_t a = w->off > base ? w->off : base;
				uint64_t b = w->off + w->len < base + SECTOR ? w->off + w->len
									     : base + SECTOR;
				memcpy(sec + (a - base), w->pre + (a - w->off), (size_t)(b - a));
				lo = a < lo ? a : lo;
				hi = b > hi ? b : hi;
			}
			if (write_full(t->fd, sec + (lo - base), (size_t)(hi - lo), lo))
				abort();
		}
		g = h;
	}
	free(sec);
	free(e);
	flushed(t, UINT64_MAX);
}

/* Under mu: the power goes off now. */
static void do_cut(struct fault_io *f)
{
	if (f->dead)
		return;
	for (struct tfile *t = f->files; t; t = t->next) {
		revert(f, t);
		/* Device writes in flight: any of their sectors may be there. */
		for (struct infl *i = t->infl; i; i = i->next)
			for (uint32_t o = 0; o < i->len; o += SECTOR) {
				uint32_t l = i->len - o < SECTOR ? i->len - o : SECTOR;
				if (keep(f)) {
					if (write_full(t->fd, i->buf + o, l, i->off + o))
						abort();
					f->st.sectors_kept++;
				} else {
					f->st.sectors_dropped++;
				}
			}
	}
	f->dead = true;
	f->cut_at = 0;
	memset(f->hold, 0, sizeof(f->hold)); /* the held calls fail now */
	f->st.cuts++;
	pthread_cond_broadcast(&f->cv);
}

/* ------------------------------------------------------------ files */

static void maybe_sleep(struct fault_io *f, uint32_t max_us)
{
	if (!max_us)
		return;
	pthread_mutex_lock(&f->mu);
	uint64_t us = rnd(f) % (max_us + 1u);
	pthread_mutex_unlock(&f->mu);
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

static int x_open(const struct store_io *io, const char *path, int flags, mode_t mode)
{
	struct fault_io *f = of(io);
	pthread_mutex_lock(&f->mu);
	int rc = begin(f, FAULT_IO_OPEN, true);
	if (rc)
		goto out;
	int fd = open(path, flags, mode);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	struct stat st;
	struct handle *h = calloc(1, sizeof(*h));
	if (!h || fstat(fd, &st) < 0) {
		rc = h ? -errno : -ENOMEM;
		goto out_fd;
	}
	struct tfile *t = f->files;
	while (t && !(t->dev == st.st_dev && t->ino == st.st_ino))
		t = t->next;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t) {
			rc = -ENOMEM;
			goto out_fd;
		}
		t->fd = open(path, O_RDWR | O_CLOEXEC);
		if (t->fd < 0) {
			rc = -errno;
			free(t);
			goto out_fd;
		}
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		t->next = f->files;
		f->files = t;
	}
	h->fd = fd;
	h->t = t;
	h->next = f->handles;
	f->handles = h;
	pthread_mutex_unlock(&f->mu);
	return fd;

out_fd:
	free(h);
	close(fd);
out:
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static ssize_t x_pread(const struct store_io *io, int fd, void *buf, size_t len, uint64_t off)
{
	struct fault_io *f = of(io);
	pthread_mutex_lock(&f->mu);
	ssize_t rc = begin(f, FAULT_IO_PREAD, true);
	struct tfile *t = file_of(f, fd);
	if (rc == 0) {
		rc = pread(t ? t->fd : fd, buf, len, (off_t)off);
		if (rc < 0)
			rc = -errno;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static ssize_t x_pwrite(const struct store_io *io, int fd, const void *buf, size_t len,
			uint64_t off)
{
	struct fault_io *f = of(io);
	maybe_sleep(f, f->o.sync_delay_max_us);
	pthread_mutex_lock(&f->mu);
	ssize_t rc = begin(f, FAULT_IO_PWRITE, true);
	struct tfile *t = file_of(f, fd);
	if (rc == 0 && !t)
		rc = -EBADF;
	if (rc == 0) {
		bool cut = event_cuts(f);
		rc = apply_write(t, buf, len, off);
		if (cut) {
			do_cut(f); /* the write was in flight: it may be torn in */
			rc = -EIO;
		} else if (rc == 0) {
			rc = (ssize_t)len;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int x_fdatasync(const struct store_io *io, int fd)
{
	struct fault_io *f = of(io);
	maybe_sleep(f, f->o.sync_delay_max_us);
	pthread_mutex_lock(&f->mu);
	int rc = begin(f, FAULT_IO_FDATASYNC, true);
	struct tfile *t = file_of(f, fd);
	if (rc == 0 && !t)
		rc = -EBADF;
	if (rc == 0) {
		if (event_cuts(f)) {
			do_cut(f);
			rc = -EIO;
		} else {
			flushed(t, UINT64_MAX);
		}
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int x_close(const struct store_io *io, int fd)
{
	struct fault_io *f = of(io);
	pthread_mutex_lock(&f->mu);
	for (struct handle **pp = &f->handles; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			struct handle *h = *pp;
			*pp = h->next;
			free(h);
			break;
		}
	pthread_mutex_unlock(&f->mu);
	return close(fd) < 0 ? -errno : 0;
}

static uint64_t x_now_ns(const struct store_io *io)
{
	(void)io;
	return loop_now_ns();
}

/* ------------------------------------------------------------ RocksDB */

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Under mu: dir's RocksDB as db holds it durably now is what a cut leaves. */
static int snapshot(struct fault_io *f, struct rocksdb_t *db, const char *dir)
{
	struct db_snap *d = NULL;
	for (int i = 0; i < f->ndbs; i++)
		if (strcmp(f->dbs[i].dir, dir) == 0)
			d = &f->dbs[i];
	if (!d) {
		if (f->ndbs == MAX_DBS)
			return -ENOSPC;
		d = &f->dbs[f->ndbs++];
		snprintf(d->dir, sizeof(d->dir), "%s", dir);
		d->snap[0] = '\0';
	}
	char path[600];
	snprintf(path, sizeof(path), "%s/snap-%llu", f->snap_dir,
		 (unsigned long long)++f->snap_n);
	char *err = NULL;
	rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(db, &err);
	/* UINT64_MAX: no memtable flush; the checkpoint holds what is durable
	 * (table files, and the WAL, which only synced writes use). */
	if (!err)
		rocksdb_checkpoint_create(cp, path, UINT64_MAX, &err);
	if (cp)
		rocksdb_checkpoint_object_destroy(cp);
	if (err) {
		fprintf(stderr, "fault_io: checkpoint of %s: %s\n", dir, err);
		free(err);
		rm_tree(path);
		return -EIO;
	}
	if (d->snap[0])
		rm_tree(d->snap);
	snprintf(d->snap, sizeof(d->snap), "%s", path);
	f->st.snapshots++;
	return 0;
}

static int x_kv_durable(const struct store_io *io, struct rocksdb_t *db, const char *dir)
{
	struct fault_io *f = of(io);
	/* A slow sync point: the store's other threads go on meanwhile, and
	 * a cut may come before it counts. */
	maybe_sleep(f, f->o.kv_delay_max_us);
	pthread_mutex_lock(&f->mu);
	int rc = begin(f, FAULT_IO_KV_DURABLE, true);
	if (rc == 0 && event_cuts(f)) {
		do_cut(f);
		rc = -EIO;
	}
	if (rc == 0)
		rc = snapshot(f, db, dir);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		int rc = -errno;
		close(in);
		return rc;
	}
	char buf[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			rc = -EIO;
			break;
		}
	if (n < 0)
		rc = -errno;
	close(in);
	close(out);
	return rc;
}

/* Under mu: the files of dir that are not the seam's become snap's. */
static int restore_db(struct fault_io *f, const struct db_snap *d, char *err, size_t errlen)
{
	DIR *dp = opendir(d->dir);
	if (!dp) {
		snprintf(err, errlen, "opendir %s: %s", d->dir, strerror(errno));
		return -errno;
	}
	struct dirent *de;
	char p[1200];
	while ((de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", d->dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		bool ours = false;
		for (struct tfile *t = f->files; t; t = t->next)
			ours |= t->dev == st.st_dev && t->ino == st.st_ino;
		if (!ours)
			rm_tree(p);
	}
	closedir(dp);
	if (!d->snap[0])
		return 0; /* nothing was ever durable */
	dp = opendir(d->snap);
	if (!dp) {
		snprintf(err, errlen, "opendir %s: %s", d->snap, strerror(errno));
		return -errno;
	}
	int rc = 0;
	while (rc == 0 && (de = readdir(dp))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char from[1200];
		snprintf(from, sizeof(from), "%s/%s", d->snap, de->d_name);
		snprintf(p, sizeof(p), "%s/%s", d->dir, de->d_name);
		rc = copy_file(from, p);
		if (rc)
			snprintf(err, errlen, "copy %s: %s", from, strerror(-rc));
	}
	closedir(dp);
	return rc;
}

/* ------------------------------------------------------------ device engine */

struct fop {
	struct store_io_aio *a;
	struct store_io_req *req;
	uint32_t turns;        /* loop turns left before it completes */
	uint64_t upto;         /* FSYNC: the file's writes it covers */
	struct infl infl;      /* WRITE: while in flight */
	struct fop *next;
};

struct store_io_aio {
	struct fault_io *f;
	struct tfile *t;
	uv_idle_t idle;
	store_io_aio_cb cb;
	void *arg;
	struct fop *head, *tail;
	void (*done_cb)(void *arg);
	void *done_arg;
};

static void infl_unlink(struct tfile *t, struct infl *i)
{
	if (i->prev)
		i->prev->next = i->next;
	else
		t->infl = i->next;
	if (i->next)
		i->next->prev = i->prev;
}

static int complete(struct store_io_aio *a, struct fop *op)
{
	struct fault_io *f = a->f;
	struct tfile *t = a->t;
	struct store_io_req *r = op->req;
	int res;
	pthread_mutex_lock(&f->mu);
	switch (r->op) {
	case STORE_IO_READ:
		res = begin(f, FAULT_IO_DEV_READ, false);
		if (res == 0) {
			ssize_t n = pread(t->fd, r->buf, r->len, (off_t)r->off);
			res = n < 0 ? -errno : (int)n;
		}
		break;
	case STORE_IO_WRITE:
		res = begin(f, FAULT_IO_DEV_WRITE, false);
		if (res == 0 && event_cuts(f)) {
			do_cut(f); /* still in flight: it may be torn in */
			res = -EIO;
		}
		if (res == 0)
			res = apply_write(t, r->buf, r->len, r->off);
		if (res == 0)
			res = (int)r->len;
		infl_unlink(t, &op->infl);
		break;
	case STORE_IO_FSYNC:
	default:
		res = begin(f, FAULT_IO_DEV_FSYNC, false);
		if (res == 0 && event_cuts(f)) {
			do_cut(f);
			res = -EIO;
		}
		if (res == 0)
			flushed(t, op->upto);
		break;
	}
	pthread_mutex_unlock(&f->mu);
	return res;
}

static void on_idle(uv_idle_t *h)
{
	struct store_io_aio *a = h->data;
	/* Take the ready ones first: callbacks submit more. */
	struct fop *ready = NULL, **rt = &ready, **pp = &a->head, *last = NULL;
	while (*pp) {
		struct fop *op = *pp;
		if (op->turns) {
			op->turns--;
			last = op;
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		op->next = NULL;
		*rt = op;
		rt = &op->next;
	}
	a->tail = last;
	while (ready) {
		struct fop *op = ready;
		ready = op->next;
		int res = complete(a, op);
		struct store_io_req *r = op->req;
		free(op);
		a->cb(a->arg, r, res);
	}
	if (!a->head)
		uv_idle_stop(&a->idle);
}

static int x_aio_open(const struct store_io *io, uv_loop_t *loop, int fd, uint32_t depth,
		      store_io_aio_cb cb, void *arg, struct store_io_aio **out)
{
	(void)depth; /* no ring: any number may wait */
	struct fault_io *f = of(io);
	pthread_mutex_lock(&f->mu);
	struct tfile *t = file_of(f, fd);
	pthread_mutex_unlock(&f->mu);
	if (!t)
		return -EBADF;
	struct store_io_aio *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->f = f;
	a->t = t;
	a->cb = cb;
	a->arg = arg;
	uv_idle_init(loop, &a->idle);
	a->idle.data = a;
	*out = a;
	return 0;
}

static void x_aio_submit(struct store_io_aio *a, struct store_io_req *req)
{
	struct fault_io *f = a->f;
	struct fop *op = calloc(1, sizeof(*op));
	if (!op)
		abort();
	op->a = a;
	op->req = req;
	pthread_mutex_lock(&f->mu);
	op->turns = f->o.dev_max_turns ? (uint32_t)(rnd(f) % (f->o.dev_max_turns + 1u)) : 0;
	if (req->op == STORE_IO_WRITE) {
		op->infl = (struct infl){ req->buf, req->off, req->len, NULL, a->t->infl };
		if (a->t->infl)
			a->t->infl->prev = &op->infl;
		a->t->infl = &op->infl;
	} else if (req->op == STORE_IO_FSYNC) {
		op->upto = a->t->seq; /* the writes completed so far */
	}
	pthread_mutex_unlock(&f->mu);
	if (a->tail)
		a->tail->next = op;
	else
		a->head = op;
	a->tail = op;
	uv_idle_start(&a->idle, on_idle);
}

static void on_idle_closed(uv_handle_t *h)
{
	struct store_io_aio *a = h->data;
	void (*cb)(void *) = a->done_cb;
	void *arg = a->done_arg;
	free(a);
	if (cb)
		cb(arg);
}

static void x_aio_close(struct store_io_aio *a, void (*done_cb)(void *arg), void *arg)
{
	a->done_cb = done_cb;
	a->done_arg = arg;
	uv_idle_stop(&a->idle);
	uv_close((uv_handle_t *)&a->idle, on_idle_closed);
}

/* ------------------------------------------------------------ control */

int fault_io_new(const struct fault_io_opts *o, struct fault_io **out)
{
	struct fault_io *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *o;
	snprintf(f->snap_dir, sizeof(f->snap_dir), "%s", o->snap_dir ? o->snap_dir : "/dev/shm");
	f->o.snap_dir = f->snap_dir;
	if (mkdir(f->snap_dir, 0700) < 0 && errno != EEXIST) {
		int rc = -errno;
		free(f);
		return rc;
	}
	f->rng = o->seed;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->io = (struct store_io){
		.impl = f,
		.open = x_open,
		.pread = x_pread,
		.pwrite = x_pwrite,
		.fdatasync = x_fdatasync,
		.close = x_close,
		.aio_open = x_aio_open,
		.aio_submit = x_aio_submit,
		.aio_close = x_aio_close,
		.now_ns = x_now_ns,
		.kv_durable = x_kv_durable,
	};
	*out = f;
	return 0;
}

const struct store_io *fault_io_ops(struct fault_io *f)
{
	return &f->io;
}

void fault_io_destroy(struct fault_io *f)
{
	if (!f)
		return;
	while (f->handles) { /* the store's, if it leaked them */
		struct handle *h = f->handles;
		f->handles = h->next;
		free(h);
	}
	while (f->files) {
		struct tfile *t = f->files;
		f->files = t->next;
		flushed(t, UINT64_MAX);
		close(t->fd);
		free(t);
	}
	for (int i = 0; i < f->ndbs; i++)
		if (f->dbs[i].snap[0])
			rm_tree(f->dbs[i].snap);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

void fault_io_fail(struct fault_io *f, enum fault_io_call call, uint64_t nth, int err)
{
	pthread_mutex_lock(&f->mu);
	f->fail_at[call] = nth ? f->calls[call] + nth : 0;
	f->fail_err[call] = err;
	pthread_mutex_unlock(&f->mu);
}

void fault_io_hold(struct fault_io *f, enum fault_io_call call, bool on)
{
	pthread_mutex_lock(&f->mu);
	f->hold[call] = on;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fault_io_cut_at(struct fault_io *f, uint64_t nth, uint32_t keep_permille)
{
	pthread_mutex_lock(&f->mu);
	f->cut_at = nth ? f->events + nth : 0;
	f->keep_permille = keep_permille;
	pthread_mutex_unlock(&f->mu);
}

void fault_io_cut(struct fault_io *f, uint32_t keep_permille)
{
	pthread_mutex_lock(&f->mu);
	f->keep_permille = keep_permille;
	do_cut(f);
	pthread_mutex_unlock(&f->mu);
}

bool fault_io_is_cut(struct fault_io *f)
{
	pthread_mutex_lock(&f->mu);
	bool dead = f->dead;
	pthread_mutex_unlock(&f->mu);
	return dead;
}

int fault_io_kv_flushed(struct fault_io *f, struct rocksdb_t *db, const char *dir)
{
	pthread_mutex_lock(&f->mu);
	int rc = f->dead ? -EIO : snapshot(f, db, dir);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

int fault_io_recover(struct fault_io *f, char *err, size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&f->mu);
	if (!f->dead) {
		snprintf(err, errlen, "fault_io_recover without a cut");
		rc = -EINVAL;
		goto out;
	}
	for (int i = 0; i < f->ndbs && rc == 0; i++)
		rc = restore_db(f, &f->dbs[i], err, errlen);
	if (rc == 0)
		f->dead = false;
out:
	pthread_mutex_unlock(&f->mu);
	return rc;
}

void fault_io_stats(struct fault_io *f, struct fault_io_stats *out)
{
	pthread_mutex_lock(&f->mu);
	*out = f->st;
	pthread_mutex_unlock(&f->mu);
}
