/*
 * main.c — iolake-s3-bench: parse flags, run the phases, print the table,
 * write --json, and exit 0 (all requests succeeded), 1 (some failed, or
 * the run could not start) or 2 (bad flags). See s3b_config.c for flags.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench/s3bench/s3b_config.h"
#include "bench/s3bench/s3b_report.h"
#include "bench/s3bench/s3b_run.h"
#include "common/flags.h"

int main(int argc, char **argv)
{
	struct s3b_config cfg;
	char err[512] = "";
	int rc = s3b_config_parse(&cfg, argc, argv, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		s3b_config_usage(stdout, "iolake-s3-bench");
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "iolake-s3-bench: %s\n", err);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a peer closing mid-write is an error we count */

	struct s3b_run run;
	if ((rc = s3b_run_init(&run, &cfg, err, sizeof(err))) < 0) {
		fprintf(stderr, "iolake-s3-bench: %s\n", err);
		return rc == -EINVAL || rc == -ENOTSUP ? 2 : 1;
	}
	int run_rc = s3b_run_all(&run, err, sizeof(err));
	if (run_rc < 0)
		fprintf(stderr, "iolake-s3-bench: %s\n", err);
	s3b_report_table(stdout, &run);
	fflush(stdout);
	int exit_code = run_rc < 0 ? 1 : 0;
	if (cfg.json_path) {
		rc = s3b_report_json(cfg.json_path, &run);
		if (rc < 0) {
			fprintf(stderr, "iolake-s3-bench: --json %s: %s\n", cfg.json_path, strerror(-rc));
			exit_code = 1;
		}
	}
	uint64_t errors = s3b_run_errors(&run);
	if (errors && !cfg.allow_errors) {
		fprintf(stderr, "iolake-s3-bench: %llu requests failed\n", (unsigned long long)errors);
		exit_code = 1;
	}
	s3b_run_free(&run);
	return exit_code;
}
