/*
 * super.c — open a device or file for the store and check its superblock.
 *
 * Owns: the open/flock of the device and the 4 KiB superblock at offset 0.
 * Invariant: a device is handed out only if its superblock names the
 * expected cluster and OSD, or was written by this call because the caller
 * asked for a format. Runs synchronously on the opener's thread, before
 * the store's loop work starts. The device's open, superblock read and
 * write, flush and close go through the I/O seam (io.h); creating the
 * file (fallocate), flock, fstat, rename and directory sync do not.
 * Does not log; messages go to err.
 */
#include "osd/store/super.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/crc.h"
#include "common/err.h"

__attribute__((format(printf, 3, 4)))
static void msg(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void store_super_hex_id(const uint8_t id[16], char out[33])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[32] = '\0';
}

void store_super_encode(const struct store_super *sb, struct store_super_disk *d)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->magic, STORE_SUPER_MAGIC, 8); /* includes the NUL */
	d->format_level = htole32(sb->format_level);
	d->block_size = htole32(STORE_BLOCK_SIZE);
	memcpy(d->cluster_id, sb->cluster_id, 16);
	d->osd_id = htole32(sb->osd_id);
	memcpy(d->format_uuid, sb->format_uuid, 16);
	d->device_size = htole64(sb->device_size);
	d->data_off = htole64(sb->data_off);
	d->data_blocks = htole64(sb->data_blocks);
	d->format_time_s = htole64((uint64_t)time(NULL));
	d->crc = 0;
	d->crc = htole32(crc32c(0, d, sizeof(*d)));
}

int store_super_decode(const struct store_super_disk *d, struct store_super *sb)
{
	if (memcmp(d->magic, STORE_SUPER_MAGIC, 8) != 0)
		return IOL_ENOT_FOUND;
	struct store_super_disk tmp;
	memcpy(&tmp, d, sizeof(tmp));
	tmp.crc = 0;
	if (crc32c(0, &tmp, sizeof(tmp)) != le32toh(d->crc))
		return IOL_ECORRUPT;
	uint32_t level = le32toh(d->format_level);
	if (level > STORE_SUPER_LEVEL)
		return IOL_EBAD_FORMAT;
	if (level == 0 || le32toh(d->block_size) != STORE_BLOCK_SIZE)
		return IOL_ECORRUPT;
	memset(sb, 0, sizeof(*sb));
	sb->format_level = level;
	memcpy(sb->cluster_id, d->cluster_id, 16);
	sb->osd_id = le32toh(d->osd_id);
	memcpy(sb->format_uuid, d->format_uuid, 16);
	sb->device_size = le64toh(d->device_size);
	sb->data_off = le64toh(d->data_off);
	sb->data_blocks = le64toh(d->data_blocks);
	if (sb->data_off % STORE_BLOCK_SIZE || sb->data_off < STORE_SUPER_SIZE ||
	    sb->data_off > sb->device_size ||
	    sb->data_blocks > (sb->device_size - sb->data_off) / STORE_BLOCK_SIZE)
		return IOL_ECORRUPT;
	return 0;
}

static int device_size(int fd, const char *path, uint64_t *size, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		msg(err, errlen, "%s: fstat: %s", path, strerror(errno));
		return e;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0) {
			int e = -errno;
			msg(err, errlen, "%s: BLKGETSIZE64: %s", path, strerror(errno));
			return e;
		}
	} else if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
	} else {
		msg(err, errlen, "%s: not a block device or regular file", path);
		return -EINVAL;
	}
	*size -= *size % STORE_BLOCK_SIZE;
	return 0;
}

/* Create path as a preallocated (or, when sparse, a sparse) file; the
 * caller asked for it by size. */
static int create_file(const char *path, uint64_t size, bool sparse, char *err, size_t errlen)
{
	/* A missing /dev node means a missing disk, never "make one in
	 * devtmpfs" (that would be an OSD running on memory). */
	if (strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/shm/", 9) != 0) {
		msg(err, errlen, "device %s does not exist (refusing to create a file under /dev)",
		    path);
		return -ENOENT;
	}
	unlink(path); /* a leftover of a creation that crashed */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = -errno;
		msg(err, errlen, "%s: create: %s", path, strerror(errno));
		return e;
	}
	int rc = sparse ? (ftruncate(fd, (off_t)size) < 0 ? errno : 0)
			: posix_fallocate(fd, 0, (off_t)size);
	if (rc == 0 && fsync(fd) < 0)
		rc = errno;
	close(fd);
	if (rc) {
		unlink(path);
		msg(err, errlen, "%s: %s %llu bytes: %s", path, sparse ? "truncate" : "fallocate",
		    (unsigned long long)size, strerror(rc));
		return -rc;
	}
	return 0;
}

/* A new superblock for the caller to commit (nothing is written). */
static int new_super(const struct store_super_expect *expect, uint64_t size,
		     struct store_super *sb, char *err, size_t errlen)
{
	memset(sb, 0, sizeof(*sb));
	sb->format_level = STORE_SUPER_LEVEL;
	memcpy(sb->cluster_id, expect->cluster_id, 16);
	sb->osd_id = expect->osd_id;
	if (getrandom(sb->format_uuid, 16, 0) != 16) {
		int e = -errno;
		msg(err, errlen, "getrandom: %s", strerror(errno));
		return e;
	}
	sb->device_size = size;
	sb->data_off = STORE_DATA_OFF;
	sb->data_blocks = (size - STORE_DATA_OFF) / STORE_BLOCK_SIZE;
	return 0;
}

int store_super_commit(const struct store_io *io, int fd, const char *path,
		       const struct store_super *sb, char *err, size_t errlen)
{
	int rc = 0;
	io = store_io_or_default(io);
	struct buf *b = buf_new_aligned(STORE_SUPER_SIZE, STORE_BLOCK_SIZE);
	if (!b) {
		msg(err, errlen, "out of memory");
		return -ENOMEM;
	}
	struct store_super_disk *blk = (struct store_super_disk *)b->data;
	store_super_encode(sb, blk);
	rc = store_io_pwrite_all(io, fd, blk, STORE_SUPER_SIZE, 0);
	if (rc == 0)
		rc = io->fdatasync(io, fd);
	if (rc) {
		msg(err, errlen, "%s: writing superblock: %s", path, strerror(-rc));
		goto out;
	}
	if (sb->created) {
		/* The file appears under its name only once formatted: a crash
		 * during creation leaves the path missing, so the next start
		 * creates it again instead of refusing a half-made file. */
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.creating", path);
		if (rename(tmp, path) < 0) {
			rc = -errno;
			msg(err, errlen, "%s: rename from %s: %s", path, tmp, strerror(errno));
			goto out;
		}
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
out:
	buf_unref(b);
	return rc;
}

int store_super_open(const struct store_io *io, const char *path,
		     const struct store_super_expect *expect, const struct store_super_flags *flags,
		     int *fd_out, struct store_super *sb, bool *formatted, char *err, size_t errlen)
{
	int rc;
	io = store_io_or_default(io);
	bool created = false;
	char open_path[4096];
	*formatted = false;
	snprintf(open_path, sizeof(open_path), "%s", path);
	msg(err, errlen, "ok");

	struct stat st;
	if (stat(path, &st) < 0) {
		if (errno != ENOENT || flags->create_size == 0) {
			rc = -errno;
			msg(err, errlen, "device %s: %s%s", path, strerror(errno),
			    errno == ENOENT ? " (refusing to start; give an existing device, "
					      "or --size to create a file)" : "");
			return rc;
		}
		if (flags->create_size < STORE_DATA_OFF + 16 * STORE_BLOCK_SIZE) {
			msg(err, errlen, "%s: size %llu too small", path,
			    (unsigned long long)flags->create_size);
			return -EINVAL;
		}
		if (strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/shm/", 9) != 0) {
			msg(err, errlen, "device %s does not exist (refusing to create a file "
			    "under /dev)", path);
			return -ENOENT;
		}
		snprintf(open_path, sizeof(open_path), "%s.creating", path);
		rc = create_file(open_path,
				 flags->create_size - flags->create_size % STORE_BLOCK_SIZE,
				 flags->create_sparse, err, errlen);
		if (rc)
			return rc;
		created = true;
	}

	int fd = io->open(io, open_path, O_RDWR | O_DIRECT | O_CLOEXEC, 0);
	if (fd < 0) {
		rc = fd;
		msg(err, errlen, "%s: open O_DIRECT: %s", path, strerror(-rc));
		goto out_unlink;
	}
	/* A process killed with io_uring requests in flight releases its
	 * files (and so this lock) asynchronously, shortly after it died:
	 * give a previous holder up to 5 s before calling the device busy. */
	for (int tries = 0;; tries++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK || tries == 500) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			msg(err, errlen, "%s: in use by another process", path);
			goto out_close;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	uint64_t size;
	rc = device_size(fd, path, &size, err, errlen);
	if (rc)
		goto out_close;
	if (size < STORE_DATA_OFF + 16 * STORE_BLOCK_SIZE) {
		msg(err, errlen, "%s: %llu bytes is too small for an OSD", path,
		    (unsigned long long)size);
		rc = -EINVAL;
		goto out_close;
	}

	struct buf *b = buf_new_aligned(STORE_SUPER_SIZE, STORE_BLOCK_SIZE);
	if (!b) {
		rc = -ENOMEM;
		msg(err, errlen, "out of memory");
		goto out_close;
	}
	struct store_super_disk *blk = (struct store_super_disk *)b->data;
	rc = store_io_pread_all(io, fd, blk, STORE_SUPER_SIZE, 0);
	if (rc) {
		msg(err, errlen, "%s: reading superblock: %s", path,
		    rc == -EIO ? "short read or I/O error" : strerror(-rc));
		goto out_buf;
	}

	char want_c[33], have_c[33];
	rc = store_super_decode(blk, sb);
	switch (rc) {
	case 0:
		if (memcmp(sb->cluster_id, expect->cluster_id, 16) == 0 &&
		    sb->osd_id == expect->osd_id) {
			if (sb->device_size > size) {
				msg(err, errlen, "%s: superblock says %llu bytes, device has %llu",
				    path, (unsigned long long)sb->device_size,
				    (unsigned long long)size);
				rc = IOL_ECORRUPT;
				goto out_buf;
			}
			goto ok; /* ours: format without force never rewrites it */
		}
		store_super_hex_id(expect->cluster_id, want_c);
		store_super_hex_id(sb->cluster_id, have_c);
		if (!(flags->format && flags->force)) {
			msg(err, errlen,
			    "%s belongs to osd %u of cluster %s, not osd %u of cluster %s "
			    "(refusing; --format --force overwrites it)",
			    path, sb->osd_id, have_c, expect->osd_id, want_c);
			rc = IOL_ECONFLICT;
			goto out_buf;
		}
		break;
	case IOL_ENOT_FOUND:
		if (!flags->format && !created) {
			msg(err, errlen, "%s has no IOLake superblock (refusing; --format formats it)",
			    path);
			goto out_buf;
		}
		break;
	case IOL_ECORRUPT:
		if (!(flags->format && flags->force)) {
			msg(err, errlen, "%s: superblock is corrupt (bad crc or fields; refusing)",
			    path);
			goto out_buf;
		}
		break;
	case IOL_EBAD_FORMAT:
		msg(err, errlen, "%s: superblock format level %u is newer than this OSD's %u",
		    path, le32toh(blk->format_level), STORE_SUPER_LEVEL);
		goto out_buf;
	default:
		goto out_buf;
	}

	rc = new_super(expect, size, sb, err, errlen);
	if (rc)
		goto out_buf;
	sb->created = created;
	*formatted = true;
ok:
	buf_unref(b);
	*fd_out = fd;
	msg(err, errlen, "ok");
	return 0;

out_buf:
	buf_unref(b);
out_close:
	io->close(io, fd);
out_unlink:
	if (created)
		unlink(open_path);
	return rc;
}
