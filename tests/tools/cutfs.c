/*
 * cutfs.c — a FUSE file system for power-cut tests of processes whose
 * writes we cannot route through a seam of our own (meta: RocksDB and
 * libraft's raft_uv do their own file I/O).
 *
 *   cutfs [--lie] [--keep PCT --seed N] BACKING_DIR MOUNTPOINT
 *                                     (foreground; root or fusermount3)
 *
 * It passes every call through to BACKING_DIR, except file data: a write
 * lands in cutfs's memory (4 KiB pages over the file's durable contents,
 * with the file's size as the writer sees it) and reaches the backing file
 * only when that file is fsync'ed or fdatasync'ed. Reads see the written
 * pages. Whatever way cutfs ends (SIGTERM, SIGKILL, unmount), every page
 * not yet synced is lost: BACKING_DIR then holds exactly what a machine
 * that lost power at that instant would have on disk. A power-cut test
 * kills the process under test, ends cutfs, and restarts the process on
 * BACKING_DIR (directly or under a fresh cutfs).
 *
 * The model is LazyFS's (file data only): namespace and size operations
 * (create, unlink, rename, mkdir, truncate, fallocate, link) go to the
 * backing directory at once and are treated as durable when they return,
 * which is kinder than a real file system (a rename there needs an fsync
 * of its directory). A test that passes here can still lose a rename on
 * real hardware; one that fails here loses acknowledged data for sure.
 *
 * --keep PCT: at the cut, each unsynced page reaches the backing file
 * with probability PCT% (seeded by --seed), at its last written contents,
 * as pages of a page cache partly written back when the power went: the
 * survivors are any subset, in no order (a page straddling the file's old
 * end extends it). Default 0: all are lost.
 *
 * A write through an fd opened O_SYNC or O_DSYNC syncs its file before
 * it returns (all of the file's pages, which is kinder than a disk).
 *
 * --lie makes a disk that lies: fsync answers success and writes
 * nothing, so every page is lost at the cut. A test run over it must fail;
 * that is how a power-cut test shows it can.
 *
 * Files are opened direct_io, so the kernel keeps no page cache of its
 * own over cutfs and every read and write comes here; mmap is not
 * supported (RocksDB and raft_uv do not map files by default).
 *
 * One thread (fuse_loop, not the multi-threaded loop): the page map has
 * no lock.
 */
#define FUSE_USE_VERSION 31

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define PAGE 4096u
#define NBUCKETS 65536u

/* A file with unsynced data, by backing inode number (so renames and
 * hard links keep it). */
struct cfile {
	ino_t ino;
	uint64_t size;          /* as the writer sees it */
	bool dirty_size;        /* size differs from the backing file's */
	int fd;                 /* the backing file, read-write (for --keep) */
	struct cpage *pages;    /* its pages, in no order */
	size_t npages;
	struct cfile *next;     /* in the files list */
};

struct cpage {
	struct cfile *f;
	uint64_t idx;
	struct cpage *hnext;    /* hash chain */
	struct cpage *fnext;    /* the file's pages */
	uint8_t data[PAGE];
};

/* An open file: the backing fd, and whether every write is a sync
 * (O_SYNC / O_DSYNC: the write reaches the backing file before it
 * returns, as on a real disk). */
struct handle {
	int fd;
	bool sync;
};

static char backing[PATH_MAX];
static bool lie;
static unsigned keep_pct;
static uint64_t seed = 1;
static struct cfile *files;
static struct cpage *table[NBUCKETS];
static uint64_t stat_pages_dropped_on_sync, stat_syncs;

static size_t bucket(ino_t ino, uint64_t idx)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ idx * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h >> 48) % NBUCKETS;
}

static int bpath(char *out, const char *path)
{
	int n = snprintf(out, PATH_MAX, "%s%s", backing, path);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static struct cfile *file_find(ino_t ino)
{
	for (struct cfile *f = files; f; f = f->next)
		if (f->ino == ino)
			return f;
	return NULL;
}

static struct cpage *page_find(struct cfile *f, uint64_t idx)
{
	for (struct cpage *p = table[bucket(f->ino, idx)]; p; p = p->hnext)
		if (p->f == f && p->idx == idx)
			return p;
	return NULL;
}

static void page_unhash(struct cpage *p)
{
	struct cpage **pp = &table[bucket(p->f->ino, p->idx)];
	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
}

/* Drop every page of f (after a sync wrote them, or on a cut). */
static void file_drop_pages(struct cfile *f)
{
	struct cpage *p = f->pages;
	while (p) {
		struct cpage *n = p->fnext;
		page_unhash(p);
		free(p);
		p = n;
	}
	f->pages = NULL;
	f->npages = 0;
}

static void file_forget(struct cfile *f)
{
	file_drop_pages(f);
	struct cfile **pp = &files;
	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	close(f->fd);
	free(f);
}

/* The cache entry of fd's file, made (size from the backing file) when
 * create is set; NULL when absent (or no memory: -ENOMEM in *err). */
static struct cfile *file_of(int fd, bool create, int *err)
{
	struct stat st;
	*err = 0;
	if (fstat(fd, &st)) {
		*err = -errno;
		return NULL;
	}
	struct cfile *f = file_find(st.st_ino);
	if (f || !create)
		return f;
	if (!(f = calloc(1, sizeof(*f)))) {
		*err = -ENOMEM;
		return NULL;
	}
	if ((f->fd = dup(fd)) < 0) {
		*err = -errno;
		free(f);
		return NULL;
	}
	f->ino = st.st_ino;
	f->size = (uint64_t)st.st_size;
	f->next = files;
	files = f;
	return f;
}

/* Page idx of f, read from the backing file when new. */
static struct cpage *page_get(struct cfile *f, int fd, uint64_t idx, int *err)
{
	struct cpage *p = page_find(f, idx);
	if (p)
		return p;
	if (!(p = calloc(1, sizeof(*p)))) {
		*err = -ENOMEM;
		return NULL;
	}
	ssize_t n = pread(fd, p->data, PAGE, (off_t)(idx * PAGE));
	if (n < 0) {
		*err = -errno;
		free(p);
		return NULL;
	}
	/* Past the writer's size the page is zeros, whatever the backing
	 * file still holds there (a truncate in between). */
	uint64_t valid = f->size > idx * PAGE ? f->size - idx * PAGE : 0;
	if (valid < PAGE)
		memset(p->data + valid, 0, PAGE - valid);
	p->f = f;
	p->idx = idx;
	size_t b = bucket(f->ino, idx);
	p->hnext = table[b];
	table[b] = p;
	p->fnext = f->pages;
	f->pages = p;
	f->npages++;
	return p;
}

/* Write f's pages and size to the backing file and make them durable. */
static int file_sync(struct cfile *f, int fd, bool datasync)
{
	if (lie) {
		stat_syncs++;
		return 0;   /* the pages stay unsynced, to be lost at the cut */
	}
	for (struct cpage *p = f->pages; p; p = p->fnext) {
		uint64_t off = p->idx * PAGE;
		if (off >= f->size)
			continue;
		size_t len = f->size - off < PAGE ? (size_t)(f->size - off) : PAGE;
		if (pwrite(fd, p->data, len, (off_t)off) != (ssize_t)len)
			return errno ? -errno : -EIO;
	}
	struct stat st;
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size != f->size && ftruncate(fd, (off_t)f->size))
		return -errno;
	if ((datasync ? fdatasync(fd) : fsync(fd)) != 0)
		return -errno;
	stat_syncs++;
	stat_pages_dropped_on_sync += f->npages;
	file_forget(f);
	return 0;
}

/* ------------------------------------------------------------ operations */

static struct handle *H(const struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static void *cut_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->use_ino = 1;
	cfg->direct_io = 1;
	cfg->entry_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->negative_timeout = 0;
	return NULL;
}

static int cut_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	if (fi ? fstat(H(fi)->fd, st) : lstat(p, st))
		return -errno;
	struct cfile *f = S_ISREG(st->st_mode) ? file_find(st->st_ino) : NULL;
	if (f)
		st->st_size = (off_t)f->size;
	return 0;
}

static int cut_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st = { .st_ino = e->d_ino, .st_mode = (mode_t)(e->d_type << 12) };
		if (fill(buf, e->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int cut_mkdir(const char *path, mode_t mode)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	return rc ? rc : mkdir(p, mode) ? -errno : 0;
}

static int cut_rmdir(const char *path)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	return rc ? rc : rmdir(p) ? -errno : 0;
}

/* The cache entry of the file at backing path p, if it is about to lose
 * its last name (so its unsynced data goes with it). */
static struct cfile *last_name(const char *p)
{
	struct stat st;
	if (lstat(p, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return NULL;
	return file_find(st.st_ino);
}

static int cut_unlink(const char *path)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	/* An open file keeps its data until closed; cutfs forgets it now
	 * (nothing reads an unlinked file's unsynced data in these tests,
	 * and after a cut it would be gone anyway). */
	struct cfile *f = last_name(p);
	if (unlink(p))
		return -errno;
	if (f)
		file_forget(f);
	return 0;
}

static int cut_rename(const char *from, const char *to, unsigned int flags)
{
	char a[PATH_MAX], b[PATH_MAX];
	int rc = bpath(a, from);
	if (!rc)
		rc = bpath(b, to);
	if (rc)
		return rc;
	struct cfile *gone = (flags & RENAME_NOREPLACE) ? NULL : last_name(b);
	if (renameat2(AT_FDCWD, a, AT_FDCWD, b, flags))
		return -errno;
	if (gone && gone != last_name(b))
		file_forget(gone);
	return 0;
}

static int cut_link(const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	int rc = bpath(a, from);
	if (!rc)
		rc = bpath(b, to);
	return rc ? rc : link(a, b) ? -errno : 0;
}

static int cut_symlink(const char *target, const char *path)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	return rc ? rc : symlink(target, p) ? -errno : 0;
}

static int cut_readlink(const char *path, char *buf, size_t size)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	ssize_t n = readlink(p, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int cut_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	return (fi ? fchmod(H(fi)->fd, mode) : chmod(p, mode)) ? -errno : 0;
}

static int cut_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	return (fi ? futimens(H(fi)->fd, tv) : utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW))
		       ? -errno : 0;
}

/* A truncate is a size change: applied to the backing file at once (as
 * durable as a rename here), and to the writer's pages. */
static int truncate_fd(int fd, off_t size)
{
	int err;
	struct cfile *f = file_of(fd, false, &err);
	if (err)
		return err;
	if (ftruncate(fd, size))
		return -errno;
	if (!f)
		return 0;
	f->size = (uint64_t)size;
	struct cpage **pp = &f->pages;
	while (*pp) {
		struct cpage *p = *pp;
		uint64_t off = p->idx * PAGE;
		if (off >= f->size) {
			*pp = p->fnext;
			page_unhash(p);
			free(p);
			f->npages--;
			continue;
		}
		if (f->size - off < PAGE)
			memset(p->data + (f->size - off), 0, PAGE - (size_t)(f->size - off));
		pp = &p->fnext;
	}
	return 0;
}

static int cut_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return truncate_fd(H(fi)->fd, size);
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	int fd = open(p, O_WRONLY);
	if (fd < 0)
		return -errno;
	rc = truncate_fd(fd, size);
	close(fd);
	return rc;
}

/* The backing file's open flags: read-write whenever the caller writes
 * (a partial page is read in before it is written), never O_DIRECT. */
static int open_flags(int flags)
{
	flags &= ~(O_DIRECT | O_SYNC | O_DSYNC);
	if ((flags & O_ACCMODE) == O_WRONLY)
		flags = (flags & ~O_ACCMODE) | O_RDWR;
	return flags;
}

static int handle_new(struct fuse_file_info *fi, int fd)
{
	struct handle *h = malloc(sizeof(*h));
	if (!h) {
		close(fd);
		return -ENOMEM;
	}
	h->fd = fd;
	h->sync = (fi->flags & (O_SYNC | O_DSYNC)) != 0;
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->direct_io = 1;
	return 0;
}

static int cut_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	int fd = open(p, open_flags(fi->flags) | O_CREAT, mode);
	if (fd < 0)
		return -errno;
	return handle_new(fi, fd);
}

static int cut_open(const char *path, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	if (rc)
		return rc;
	int fd = open(p, open_flags(fi->flags));
	if (fd < 0)
		return -errno;
	if (fi->flags & O_TRUNC) {
		int err;
		struct cfile *f = file_of(fd, false, &err);
		if (f)
			file_forget(f);
	}
	return handle_new(fi, fd);
}

static int cut_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	int fd = H(fi)->fd, err;
	struct cfile *f = file_of(fd, false, &err);
	if (err)
		return err;
	if (!f) {
		ssize_t n = pread(fd, buf, size, off);
		return n < 0 ? -errno : (int)n;
	}
	if ((uint64_t)off >= f->size)
		return 0;
	if (size > f->size - (uint64_t)off)
		size = (size_t)(f->size - (uint64_t)off);
	size_t done = 0;
	while (done < size) {
		uint64_t at = (uint64_t)off + done;
		uint64_t idx = at / PAGE;
		size_t in = (size_t)(at % PAGE), len = PAGE - in;
		if (len > size - done)
			len = size - done;
		struct cpage *p = page_find(f, idx);
		if (p) {
			memcpy(buf + done, p->data + in, len);
		} else {
			ssize_t n = pread(fd, buf + done, len, (off_t)at);
			if (n < 0)
				return -errno;
			if ((size_t)n < len)   /* a hole the writer's size covers */
				memset(buf + done + n, 0, len - (size_t)n);
		}
		done += len;
	}
	return (int)done;
}

static int cut_write(const char *path, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)path;
	int fd = H(fi)->fd, err;
	if (fi->flags & O_APPEND) {
		struct cfile *g = file_of(fd, true, &err);
		if (!g)
			return err;
		off = (off_t)g->size;
	}
	struct cfile *f = file_of(fd, true, &err);
	if (!f)
		return err;
	size_t done = 0;
	while (done < size) {
		uint64_t at = (uint64_t)off + done;
		size_t in = (size_t)(at % PAGE), len = PAGE - in;
		if (len > size - done)
			len = size - done;
		struct cpage *p = page_get(f, fd, at / PAGE, &err);
		if (!p)
			return err;
		memcpy(p->data + in, buf + done, len);
		done += len;
	}
	if ((uint64_t)off + size > f->size)
		f->size = (uint64_t)off + size;
	if (H(fi)->sync && (err = file_sync(f, fd, true)))
		return err;
	return (int)size;
}

static int cut_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	int fd = H(fi)->fd, err;
	struct cfile *f = file_of(fd, false, &err);
	if (err)
		return err;
	if (!f)
		return (datasync ? fdatasync(fd) : fsync(fd)) ? -errno : 0;
	return file_sync(f, fd, datasync);
}

static int cut_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return 0;   /* namespace operations are durable when done (see top) */
}

static int cut_fallocate(const char *path, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	(void)path;
	int fd = H(fi)->fd, err;
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;   /* punching holes would need the pages too */
	struct cfile *f = file_of(fd, false, &err);
	if (err)
		return err;
	if (fallocate(fd, mode, off, len))
		return -errno;
	if (f && !(mode & FALLOC_FL_KEEP_SIZE) && (uint64_t)(off + len) > f->size)
		f->size = (uint64_t)(off + len);
	return 0;
}

static int cut_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close(H(fi)->fd);
	free(H(fi));
	return 0;   /* closing does not sync: the pages stay until fsync */
}

static int cut_statfs(const char *path, struct statvfs *st)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	return rc ? rc : statvfs(p, st) ? -errno : 0;
}

static int cut_access(const char *path, int mask)
{
	char p[PATH_MAX];
	int rc = bpath(p, path);
	return rc ? rc : access(p, mask) ? -errno : 0;
}

static const struct fuse_operations ops = {
	.init = cut_init,
	.getattr = cut_getattr,
	.readdir = cut_readdir,
	.mkdir = cut_mkdir,
	.rmdir = cut_rmdir,
	.unlink = cut_unlink,
	.rename = cut_rename,
	.link = cut_link,
	.symlink = cut_symlink,
	.readlink = cut_readlink,
	.chmod = cut_chmod,
	.utimens = cut_utimens,
	.truncate = cut_truncate,
	.create = cut_create,
	.open = cut_open,
	.read = cut_read,
	.write = cut_write,
	.fsync = cut_fsync,
	.fsyncdir = cut_fsyncdir,
	.fallocate = cut_fallocate,
	.release = cut_release,
	.statfs = cut_statfs,
	.access = cut_access,
};

int main(int argc, char **argv)
{
	char *prog = argv[0];
	while (argc > 3 && strncmp(argv[1], "--", 2) == 0) {
		if (strcmp(argv[1], "--lie") == 0) {
			lie = true;
			argv++, argc--;
		} else if (strcmp(argv[1], "--keep") == 0) {
			keep_pct = (unsigned)atoi(argv[2]);
			argv += 2, argc -= 2;
		} else if (strcmp(argv[1], "--seed") == 0) {
			seed = strtoull(argv[2], NULL, 10);
			argv += 2, argc -= 2;
		} else {
			break;
		}
	}
	if (argc != 3 || keep_pct > 100) {
		fprintf(stderr, "usage: cutfs [--lie] [--keep PCT --seed N] BACKING_DIR MOUNTPOINT\n");
		return 2;
	}
	if (!realpath(argv[1], backing)) {
		fprintf(stderr, "cutfs: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	char *fargv[] = { prog, "-f", "-s", "-o", "default_permissions,fsname=cutfs",
			  argv[2], NULL };
	int rc = fuse_main(6, fargv, &ops, NULL);
	size_t unsynced = 0, nfiles = 0, kept = 0;
	for (struct cfile *f = files; f; f = f->next, nfiles++)
		for (struct cpage *p = f->pages; p; p = p->fnext, unsynced++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			if ((seed >> 33) % 100 >= keep_pct || p->idx * PAGE >= f->size)
				continue;
			uint64_t off = p->idx * PAGE;
			size_t len = f->size - off < PAGE ? (size_t)(f->size - off) : PAGE;
			if (pwrite(f->fd, p->data, len, (off_t)off) == (ssize_t)len)
				kept++;
		}
	fprintf(stderr, "cutfs: %llu syncs; at exit %zu unsynced pages in %zu files: %zu kept, "
		"the rest lost\n", (unsigned long long)stat_syncs, unsynced, nfiles, kept);
	return rc;
}
