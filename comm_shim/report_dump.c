/*
 * report_dump FILE - the shim's per-job report (ISLE_REPORT_FILE) read
 * through proto's one reader, printed one fact a line for scripts
 * (tests/integration/67-comm-report.sh):
 *   api mpi | ranks N | class MIN taken T passed P ran PATH,...|-  |
 *   tier NAME sent S library L codecs C,... | probe B SECONDS
 * Exit 1 with the reader's message when the file is not a valid report.
 */
#include <stdio.h>

#include "isle_proto.h"

int main(int argc, char **argv)
{
	struct isle_report r;
	char err[512];

	if (argc != 2) {
		fprintf(stderr, "usage: report_dump FILE\n");
		return 2;
	}
	if (isle_report_read(argv[1], &r, err, sizeof(err))) {
		fprintf(stderr, "report_dump: %s\n", err);
		return 1;
	}
	printf("api %s\nranks %d\n", r.api, r.ranks);
	for (int k = 0; k < ISLE_REPORT_CLASSES; k++) {
		printf("class %llu taken %llu passed %llu ran ",
		       (unsigned long long)isle_report_class_min(k),
		       (unsigned long long)r.taken[k],
		       (unsigned long long)r.passed[k]);
		for (int p = 0; p < ISLE_REPORT_PATHS; p++)
			if (r.ran[k] & (1u << p))
				printf("%s%s",
				       (r.ran[k] & ((1u << p) - 1)) ? "," : "",
				       isle_report_path_name(p));
		printf("%s\n", r.ran[k] ? "" : "-");
	}
	for (int t = 0; t < ISLE_REPORT_TIERS; t++) {
		const char *sep = "";

		printf("tier %s sent %llu library %llu codecs ",
		       isle_scope_name((isle_scope)t),
		       (unsigned long long)r.sent[t],
		       (unsigned long long)r.library[t]);
		for (int c = 0; c < ISLE_CODEC_COUNT; c++)
			if (r.codecs[t] & (1u << c)) {
				printf(
				    "%s%s", sep,
				    isle_codec_kind_name((isle_codec_kind)c));
				sep = ",";
			}
		printf("%s\n", *sep ? "" : "-");
	}
	printf("probe %llu %g\n", (unsigned long long)r.probe_bytes, r.probe_s);
	return 0;
}
