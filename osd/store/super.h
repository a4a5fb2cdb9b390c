/*
 * super.h — the OSD device's superblock: who this device belongs to and
 * where its data area starts.
 *
 * Owns: the first 4 KiB of the device, and the decision whether a device
 * may be used (missing path, unformatted, foreign, newer format). Opening
 * is synchronous and happens once, before any loop work; the returned fd
 * (O_DIRECT|O_RDWR, flock'ed) is handed to the dev module.
 *
 * Does not: log (errors are returned with a message in the caller's
 * buffer), create a missing device unless asked, or ever fall back to
 * memory or another path.
 */
#ifndef OSD_STORE_SUPER_H
#define OSD_STORE_SUPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osd/store/io.h"

#define STORE_SUPER_MAGIC "IOLKOSD"      /* + NUL: 8 bytes on disk */
#define STORE_SUPER_LEVEL 1              /* the newest format we know */
#define STORE_BLOCK_SIZE 4096u
#define STORE_SUPER_SIZE 4096u
/* The data area starts 1 MiB in: room for a future second superblock
 * copy and labels, and 1 MiB alignment for the extents. */
#define STORE_DATA_OFF (1u << 20)

/* On-disk superblock, all integers little-endian, at device offset 0.
 * crc is the crc32c of the whole 4 KiB block computed with crc = 0. */
struct store_super_disk {
	uint8_t magic[8];        /* "IOLKOSD\0" */
	uint32_t format_level;   /* STORE_SUPER_LEVEL when written */
	uint32_t block_size;     /* 4096: unit of extents and of O_DIRECT */
	uint8_t cluster_id[16];  /* the cluster this OSD belongs to */
	uint32_t osd_id;         /* this OSD's id within the cluster */
	uint32_t reserved0;      /* 0 */
	uint8_t format_uuid[16]; /* random per format: pairs device and meta dir */
	uint64_t device_size;    /* bytes usable at format time (multiple of 4096) */
	uint64_t data_off;       /* byte offset of the data area (STORE_DATA_OFF) */
	uint64_t data_blocks;    /* blocks of block_size in the data area */
	uint64_t format_time_s;  /* wall-clock seconds at format, for operators */
	uint8_t pad[4004];       /* zeros */
	uint32_t crc;            /* crc32c of the block with this field = 0 */
};
_Static_assert(sizeof(struct store_super_disk) == STORE_SUPER_SIZE,
	       "superblock must be exactly one 4 KiB block");

/* The decoded superblock (host byte order). */
struct store_super {
	uint32_t format_level;
	uint8_t cluster_id[16];
	uint32_t osd_id;
	uint8_t format_uuid[16];
	uint64_t device_size;
	uint64_t data_off;
	uint64_t data_blocks;
	bool created;   /* not on disk: this open created the file (under
	                 * path + ".creating" until store_super_commit) */
};

/* Who the caller expects to find on the device. */
struct store_super_expect {
	uint8_t cluster_id[16];
	uint32_t osd_id;
};

struct store_super_flags {
	bool format;          /* write a superblock where there is none */
	bool force;           /* with format: overwrite another OSD's superblock */
	uint64_t create_size; /* >0: create the path as a regular file of this
	                       * size (fallocate'd) if missing; implies format
	                       * of a file the store just created */
	bool create_sparse;   /* with create_size: a sparse file instead (space
	                       * is taken as shards are written; a full file
	                       * system fails those puts with ENOSPC) */
};

/*
 * Open path O_DIRECT|O_RDWR through io (NULL: the default), take an
 * exclusive flock, and check or write its superblock.
 *
 * Returns 0 with *fd_out (caller closes it through io) and *sb filled. *formatted
 * true means a format is due and NOTHING is written yet: sb holds the new
 * superblock (fresh format uuid); the caller prepares its metadata for it
 * and then calls store_super_commit(). Until then the device keeps its old
 * superblock (or none), and a created file is not yet at path, so a crash
 * in between never leaves a device that refuses to start. On failure returns
 * a negative error, writes a one-line message naming the problem into
 * err[errlen] (always NUL-terminated when errlen > 0), and creates nothing:
 *   -ENOENT            path missing (and create_size == 0, or under /dev/)
 *   -EINVAL            device too small, not a file or block device,
 *                      or O_DIRECT refused
 *   -EBUSY             another process holds the device
 *   IOL_ENOT_FOUND     no superblock (unknown magic) and !format
 *   IOL_ECORRUPT       our magic but a bad crc, and !format+force
 *   IOL_ECONFLICT      another cluster id or osd id, and !(format && force)
 *   IOL_EBAD_FORMAT    a newer format level than STORE_SUPER_LEVEL
 *   -errno             an I/O error
 */
int store_super_open(const struct store_io *io, const char *path,
		     const struct store_super_expect *expect, const struct store_super_flags *flags,
		     int *fd_out, struct store_super *sb, bool *formatted, char *err, size_t errlen);

/* Write sb (from a store_super_open that returned *formatted) to fd and
 * flush it, through io (NULL: the default); for a created file, rename it
 * into place. 0 or -errno. */
int store_super_commit(const struct store_io *io, int fd, const char *path,
		       const struct store_super *sb, char *err, size_t errlen);

/* Encode sb into a 4 KiB block (crc filled). Pure. */
void store_super_encode(const struct store_super *sb, struct store_super_disk *out);

/* Decode a 4 KiB block. Returns 0, IOL_ENOT_FOUND (no magic: unformatted),
 * IOL_ECORRUPT (bad crc or impossible fields), IOL_EBAD_FORMAT (newer
 * level). Pure. */
int store_super_decode(const struct store_super_disk *in, struct store_super *sb);

/* Format a hex id ("0011..ff", 32 chars + NUL) for messages. */
void store_super_hex_id(const uint8_t id[16], char out[33]);

#endif
