/*
 * fuzz_opts.c - the strings a user or admin hands isle: codec specs
 * (plan files, ISLE_COMM_CODEC), the --isle-* job options and the
 * plugstack.conf policy of the SPANK plugin, the controller's GRES detail,
 * and the mode, tier and workload names.
 *
 * Input: first byte selects what is parsed; the rest is the string (for
 * the policy, blank-separated arguments).
 */
#include "fuzz.h"
#include "isle_place.h"
#include "isle_topo.h"
#include "spank_isle.h"

/* fuzz_opts_codec.c: codec specs, and the shim's sizes and bounds of what
 * they parse to. */
void fuzz_codec_spec(const char *s);

static void job_opt(int opt, const char *s)
{
	struct isle__spank_policy pol;
	struct isle_job_opts o, res, back;
	char buf[128], err[256];

	memset(&o, 0, sizeof(o));
	if (isle_job_opt_parse(&o, opt, s, err, sizeof(err)) != 0)
		return;
	isle__spank_policy_init(&pol);
	if (isle__spank_resolve(&pol, &o, &res, err, sizeof(err)) != 0)
		return;
	/* What travels to the controller must pass the same checks. */
	memset(&back, 0, sizeof(back));
	isle_job_opt_format(&res, opt, buf, sizeof(buf));
	if (isle_job_opt_parse(&back, opt, buf, err, sizeof(err)) != 0) {
		fprintf(stderr, "option %d \"%s\" -> \"%s\" refused: %s\n", opt,
			s, buf, err);
		abort();
	}
}

static void policy(char *s)
{
	struct isle__spank_policy pol;
	char *av[64], err[256], *save = NULL, *tok;
	int ac = 0;

	for (tok = strtok_r(s, " \t\n", &save); tok && ac < 64;
	     tok = strtok_r(NULL, " \t\n", &save))
		av[ac++] = tok;
	isle__spank_policy_init(&pol);
	isle__spank_policy_parse(&pol, ac, av, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, out[256];

	if (size < 1)
		return 0;
	s = fuzz_str(data + 1, size - 1);
	switch (data[0] % 8) {
	case 0:
		fuzz_codec_spec(s);
		break;
	case 1:
		policy(s);
		break;
	case 2:
		isle__gres_gpu_idx(s, out, sizeof(out));
		isle__gres_gpu_idx(s, out, 4);
		break;
	case 3:
		isle_place_mode_parse(s);
		isle_tier_parse(s);
		isle_workload_parse(s);
		break;
	default:
		job_opt(1 + (data[0] / 8) % (ISLE_OPT_COUNT - 1), s);
		break;
	}
	free(s);
	return 0;
}
