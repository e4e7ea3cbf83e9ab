/*
 * fuzz_plan.c - the plan reader of the comm shim (plan.json, read inside
 * every job process): parse, hash, write back canonically and parse that
 * again, which must succeed and give the same hash.
 */
#include "fuzz.h"
#include "isle_comm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isle_plan *p = NULL, *q = NULL;
	char err[512], *out = NULL;
	size_t outlen = 0;
	FILE *mf;

	if (isle_plan_parse((const char *)data, size, "plan.json", &p, err,
			    sizeof(err)) != 0)
		return 0;
	mf = open_memstream(&out, &outlen);
	if (!mf)
		abort();
	if (isle_plan_write(p, mf) != 0)
		abort();
	fclose(mf);
	if (isle_plan_parse(out, outlen, "rewritten", &q, err, sizeof(err)) !=
	    0) {
		fprintf(stderr, "rewritten plan does not load: %s\n", err);
		abort();
	}
	if (isle_plan_hash(p) != isle_plan_hash(q)) {
		fprintf(stderr, "rewritten plan hashes differently\n");
		abort();
	}
	isle_plan_destroy(q);
	isle_plan_destroy(p);
	free(out);
	return 0;
}
