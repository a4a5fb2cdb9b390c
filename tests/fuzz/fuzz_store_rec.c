/*
 * fuzz_store_rec.c — libFuzzer target for the OSD store's on-disk
 * decoders (osd/store/rec.c, super.c): a shard key and a shard record as
 * RocksDB hands them back, and the device's 4 KiB superblock. A damaged
 * disk or index must give IOL_ECORRUPT (or IOL_EBAD_FORMAT), never a
 * crash or a read outside the bytes. What decodes must be consistent:
 * an inline record's data lies inside the input, an extent record's crc
 * array too, and a key re-encodes to the bytes it came from.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/err.h"
#include "osd/store/rec.h"
#include "osd/store/super.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_key k;
	if (store_key_decode(data, size, &k) == 0) {
		uint8_t out[STORE_KEY_LEN];
		store_key_encode(&k, out);
		if (size != STORE_KEY_LEN || memcmp(out, data, STORE_KEY_LEN) != 0)
			__builtin_trap();   /* a key has one encoding */
		char text[512];
		store_key_format(&k, text, sizeof(text));
	}

	struct store_rec r;
	int rc = store_rec_decode(data, size, &r);
	if (rc == 0) {
		const uint8_t *end = data + size;
		if (r.is_inline) {
			if (r.data < data || r.length > (uint64_t)(end - r.data))
				__builtin_trap();
		} else {
			if (r.crcs < data || (uint64_t)r.ncrc * 4 > (uint64_t)(end - r.crcs))
				__builtin_trap();
			uint32_t x = 0;
			for (uint32_t i = 0; i < r.ncrc; i++)
				x ^= store_rec_crc_at(&r, i);
			(void)x;
		}
	} else if (rc != IOL_ECORRUPT && rc != IOL_EBAD_FORMAT) {
		__builtin_trap();
	}

	struct store_super_disk disk;
	memset(&disk, 0, sizeof(disk));
	memcpy(&disk, data, size < sizeof(disk) ? size : sizeof(disk));
	struct store_super sb;
	rc = store_super_decode(&disk, &sb);
	if (rc == 0) {
		struct store_super_disk again;
		store_super_encode(&sb, &again);
		struct store_super sb2;
		if (store_super_decode(&again, &sb2) != 0)
			__builtin_trap();   /* what we write, we read */
	} else if (rc != IOL_ECORRUPT && rc != IOL_EBAD_FORMAT && rc != IOL_ENOT_FOUND) {
		__builtin_trap();
	}
	return 0;
}
