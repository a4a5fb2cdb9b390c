/*
 * fuzz_snap_desc.c — libFuzzer target for the Raft snapshot descriptor
 * decoder (meta/snap.c snap_desc_decode): the bytes libraft stores and
 * ships for a meta snapshot, read back at every restart and install. A
 * descriptor that decodes must name only safe file names (no '/', not
 * "." or "..": they become paths under DIR/snap) and must survive an
 * encode and a second decode unchanged.
 */
#include <raft.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "meta/snap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snap_desc d;
	if (snap_desc_decode(data, size, &d) != 0)
		return 0;
	if (!snap_name_ok(d.checkpoint))
		__builtin_trap();
	for (size_t i = 0; i < d.n_files; i++)
		if (!snap_name_ok(d.files[i].name))
			__builtin_trap();
	void *b;
	size_t len;
	if (snap_desc_encode(&d, &b, &len) == 0) {
		struct snap_desc e;
		if (len % 8 || snap_desc_decode(b, len, &e) != 0)
			__builtin_trap();   /* what we write, we read */
		if (e.applied_index != d.applied_index || e.n_files != d.n_files ||
		    e.member_id != d.member_id || strcmp(e.checkpoint, d.checkpoint) ||
		    strcmp(e.member_addr, d.member_addr) || e.bytes != d.bytes)
			__builtin_trap();
		for (size_t i = 0; i < d.n_files; i++)
			if (strcmp(e.files[i].name, d.files[i].name) ||
			    e.files[i].size != d.files[i].size || e.files[i].crc32c != d.files[i].crc32c)
				__builtin_trap();
		snap_desc_free(&e);
		raft_free(b);
	}
	snap_desc_free(&d);
	return 0;
}
