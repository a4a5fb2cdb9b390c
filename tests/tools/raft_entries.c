/*
 * raft-entries — write or verify a raft_uv log (tests/lib/raft_log.h)
 * with the stock libraft: this tool links Debian's libraft.so, whose
 * byteCrc32 is its own table loop, not meta/raftcrc.c's. test_raftcrc
 * runs it against logs the IOLake binaries write and the other way round.
 *
 *   raft-entries write DIR N SEED    exit 0 when written
 *   raft-entries verify DIR N SEED   exit 0 when DIR holds exactly that log
 * Exit 1 with a message on stderr otherwise, 2 on a usage error or when
 * this process could see a byteCrc32 other than libraft's hidden one.
 */
#include <dlfcn.h>
#include <unistd.h>

#include "tests/lib/raft_log.h"

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "write") && strcmp(argv[1], "verify"))) {
		fprintf(stderr, "usage: raft-entries write|verify DIR N SEED\n");
		return 2;
	}
	/* libraft.so keeps byteCrc32 hidden: one visible here would be a
	 * replacement, and this tool must use the stock one. */
	if (dlsym(RTLD_DEFAULT, "byteCrc32")) {
		fprintf(stderr, "raft-entries: a byteCrc32 is visible: not the stock libraft\n");
		return 2;
	}
	unsigned n = (unsigned)strtoul(argv[3], NULL, 10);
	uint32_t seed = (uint32_t)strtoul(argv[4], NULL, 10);
	char err[256] = "";
	int rc = argv[1][0] == 'w' ? raft_log_write(argv[2], n, seed, err, sizeof(err))
				   : raft_log_verify(argv[2], n, seed, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "raft-entries %s %s: %s\n", argv[1], argv[2], err);
		/* _exit: libraft 0.15 leaks the entries of a load it refuses
		 * (extendEntries), which LeakSanitizer would report. */
		fflush(stderr);
		_exit(1);
	}
	return 0;
}
