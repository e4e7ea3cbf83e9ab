/*
 * test_slurm_plugin_spank_opts.c - the isle SPANK options and the
 * plugstack.conf policy (slurm_plugin/spank_opts.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "isle_place.h"
#include "spank_isle.h"

static char err[256];

static int parse(struct isle_job_opts *o, int opt, const char *val)
{
	err[0] = '\0';
	return isle_job_opt_parse(o, opt, val, err, sizeof(err));
}

static void test_tp_pp(void **state)
{
	struct isle_job_opts o = {0};

	assert_int_equal(parse(&o, ISLE_OPT_TP, "8"), 0);
	assert_int_equal(o.tp, 8);
	assert_true(o.set & (1u << ISLE_OPT_TP));
	assert_int_equal(parse(&o, ISLE_OPT_PP, "1024"), 0);
	assert_int_equal(o.pp, 1024);

	const char *bad[] = {"0", "-2", "abc", "8x", "", "1025", "99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, ISLE_OPT_TP, bad[i]), -EINVAL);
		assert_non_null(strstr(err, "invalid --isle-tp"));
	}
	assert_int_equal(parse(&o, ISLE_OPT_TP, NULL), -EINVAL);
	assert_int_equal(o.tp, 8); /* a bad value leaves the old one */
	assert_int_equal(parse(&o, ISLE_OPT_PP, "0"), -EINVAL);
	assert_string_equal(
	    err, "invalid --isle-pp '0': expected an integer from 1 to 1024");
}

static void test_mode_span_shim(void **state)
{
	struct isle_job_opts o = {0};

	assert_int_equal(parse(&o, ISLE_OPT_MODE, "required"), 0);
	assert_int_equal(o.mode, ISLE_PLACE_REQUIRED);
	assert_int_equal(parse(&o, ISLE_OPT_MODE, "PREFERRED"), 0);
	assert_int_equal(o.mode, ISLE_PLACE_PREFERRED);
	assert_int_equal(parse(&o, ISLE_OPT_MODE, "sometimes"), -EINVAL);
	assert_non_null(strstr(err, "required or preferred"));

	assert_int_equal(parse(&o, ISLE_OPT_SPAN, "island"), 0);
	assert_int_equal(o.span, ISLE_TIER_ISLAND);
	assert_int_equal(parse(&o, ISLE_OPT_SPAN, "spine"), 0);
	assert_int_equal(o.span, ISLE_TIER_SPINE);
	/* core is the unrestricted default, not a user choice */
	assert_int_equal(parse(&o, ISLE_OPT_SPAN, "core"), -EINVAL);
	assert_int_equal(parse(&o, ISLE_OPT_SPAN, "rack"), -EINVAL);

	assert_int_equal(parse(&o, ISLE_OPT_SHIM, "off"), 0);
	assert_int_equal(o.shim, ISLE_SHIM_OFF);
	assert_int_equal(parse(&o, ISLE_OPT_SHIM, "/tmp/evil.so"), -EINVAL);
	assert_non_null(strstr(err, "--isle-shim"));
	assert_int_equal(parse(&o, 0, "x"), -EINVAL);
	assert_int_equal(parse(&o, ISLE_OPT_COUNT, "x"), -EINVAL);
}

/*
 * What sbatch writes into the job environment (resolved values, span
 * "core" when unrestricted) reads back in the controller unchanged; the
 * controller's reader keeps the user parser's limits.
 */
static void test_env_roundtrip(void **state)
{
	struct isle__spank_policy p;
	struct isle_job_opts user = {0}, job, back = {0};
	char buf[64];

	isle__spank_policy_init(&p);
	assert_int_equal(parse(&user, ISLE_OPT_TP, "8"), 0);
	assert_int_equal(isle__spank_resolve(&p, &user, &job, err, sizeof(err)),
			 0);
	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		const char *v =
		    isle_job_opt_format(&job, opt, buf, sizeof(buf));

		if (isle_job_env_parse(&back, opt, v, err, sizeof(err)))
			fail_msg("%s=%s: %s", isle_job_opt_desc(opt)->env, v,
				 err);
	}
	assert_int_equal(back.tp, 8);
	assert_int_equal(back.span, ISLE_TIER_CORE);
	assert_int_equal(back.mode, job.mode);
	assert_int_equal(back.set, (1u << ISLE_OPT_COUNT) - 2);
	assert_int_equal(
	    isle_job_env_parse(&back, ISLE_OPT_TP, "65536", err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(
	    err,
	    "invalid --isle-tp '65536': expected an integer from 1 to 1024");
	assert_int_equal(
	    isle_job_env_parse(&back, ISLE_OPT_SPAN, "rack", err, sizeof(err)),
	    -EINVAL);
}

static void test_compress(void **state)
{
	struct isle_job_opts o = {0};
	char buf[64];

	assert_int_equal(parse(&o, ISLE_OPT_COMPRESS, "bf16"), 0);
	assert_int_equal(o.codec.kind, ISLE_CODEC_BF16);
	assert_int_equal(parse(&o, ISLE_OPT_COMPRESS, "topk:0.01"), 0);
	assert_int_equal(o.codec.kind, ISLE_CODEC_TOPK);
	assert_true(o.codec.ratio > 0.0099 && o.codec.ratio < 0.0101);
	assert_string_equal(
	    isle_job_opt_format(&o, ISLE_OPT_COMPRESS, buf, sizeof(buf)),
	    "topk:0.01");
	assert_int_equal(parse(&o, ISLE_OPT_COMPRESS, "topk:1"), 0);

	const char *bad[] = {"topk",	  "topk:",     "topk:0", "topk:1.5",
			     "topk:-0.1", "topk:0.1x", "fp32",	 ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(&o, ISLE_OPT_COMPRESS, bad[i]), -EINVAL);
		assert_non_null(strstr(err, "invalid --isle-compress"));
	}
}

static void test_policy(void **state)
{
	struct isle__spank_policy p;
	char *ok[] = {"default_tp=2",
		      "default_mode=preferred",
		      "allowed_codecs=fp16,topk",
		      "shim=/opt/isle/lib/libisle_shim.so",
		      "max_tp=16",
		      "default_span=leaf"};
	char *bad_key[] = {"tp=2"};
	char *bad_path[] = {"shim=lib/x.so"};
	char *bad_default[] = {"allowed_codecs=fp16", "default_compress=int8"};
	char *bad_codec[] = {"allowed_codecs=fp16,zstd"};
	char *no_eq[] = {"default_tp"};

	isle__spank_policy_init(&p);
	assert_int_equal(p.defaults.tp, 1);
	assert_int_equal(p.defaults.span, ISLE_TIER_CORE);
	assert_int_equal(p.defaults.mode, ISLE_PLACE_REQUIRED);
	assert_int_equal(isle__spank_policy_parse(&p, 6, ok, err, sizeof(err)),
			 0);
	assert_int_equal(p.defaults.tp, 2);
	assert_int_equal(p.defaults.mode, ISLE_PLACE_PREFERRED);
	assert_int_equal(p.defaults.span, ISLE_TIER_LEAF);
	assert_int_equal(p.defaults.set, 0);
	assert_int_equal(p.max_tp, 16);
	assert_string_equal(p.shim_path, "/opt/isle/lib/libisle_shim.so");
	assert_int_equal(p.allowed_codecs, (1u << ISLE_CODEC_NONE) |
					       (1u << ISLE_CODEC_FP16) |
					       (1u << ISLE_CODEC_TOPK));

	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 1, bad_key, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "plugstack.conf: invalid argument 'tp=2'"));
	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 1, bad_path, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "absolute path"));
	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 2, bad_default, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "default_compress=int8"));
	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 1, bad_codec, err, sizeof(err)),
	    -EINVAL);
	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 1, no_eq, err, sizeof(err)), -EINVAL);

	/* Shim reports: off unless a directory is given; a bounded keep. */
	{
		char *rep[] = {"reports=/var/lib/isle/reports",
			       "reports_keep=500"};
		char *rel[] = {"reports=var/reports"};
		char *keep0[] = {"reports_keep=0"};

		isle__spank_policy_init(&p);
		assert_string_equal(p.reports_dir, "");
		assert_int_equal(p.reports_keep, 10000);
		assert_int_equal(
		    isle__spank_policy_parse(&p, 2, rep, err, sizeof(err)), 0);
		assert_string_equal(p.reports_dir, "/var/lib/isle/reports");
		assert_int_equal(p.reports_keep, 500);
		assert_int_equal(
		    isle__spank_policy_parse(&p, 1, rel, err, sizeof(err)),
		    -EINVAL);
		assert_non_null(strstr(err, "absolute path"));
		assert_int_equal(
		    isle__spank_policy_parse(&p, 1, keep0, err, sizeof(err)),
		    -EINVAL);
		assert_non_null(strstr(err, "reports_keep=0"));
	}
}

static void test_resolve(void **state)
{
	struct isle__spank_policy p;
	struct isle_job_opts u = {0}, out;
	char *args[] = {"default_tp=4", "allowed_codecs=fp16",
			"shim=/opt/isle/libisle_shim.so", "max_tp=8"};
	char buf[64];

	isle__spank_policy_init(&p);
	assert_int_equal(
	    isle__spank_policy_parse(&p, 4, args, err, sizeof(err)), 0);

	/* Defaults fill what the user left out. */
	assert_int_equal(parse(&u, ISLE_OPT_PP, "2"), 0);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 0);
	assert_int_equal(out.tp, 4);
	assert_int_equal(out.pp, 2);
	assert_int_equal(out.shim, ISLE_SHIM_AUTO);
	assert_string_equal(
	    isle_job_opt_format(&out, ISLE_OPT_MODE, buf, sizeof(buf)),
	    "required");
	assert_string_equal(
	    isle_job_opt_format(&out, ISLE_OPT_SPAN, buf, sizeof(buf)), "core");
	assert_string_equal(isle_job_opt_desc(ISLE_OPT_TP)->env, "ISLE_TP");
	assert_null(isle_job_opt_desc(ISLE_OPT_COUNT));

	/* Site limits. */
	assert_int_equal(parse(&u, ISLE_OPT_TP, "16"), 0);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "max_tp=8"));
	assert_int_equal(parse(&u, ISLE_OPT_TP, "8"), 0);
	assert_int_equal(parse(&u, ISLE_OPT_COMPRESS, "int8"), 0);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "--isle-compress=int8 is not allowed"));
	assert_int_equal(parse(&u, ISLE_OPT_COMPRESS, "fp16"), 0);
	assert_int_equal(parse(&u, ISLE_OPT_SHIM, "off"), 0);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "needs the isle shim"));
	assert_int_equal(parse(&u, ISLE_OPT_SHIM, "auto"), 0);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 0);
	assert_int_equal(out.codec.kind, ISLE_CODEC_FP16);

	/* No shim installed: compression cannot be asked for. */
	isle__spank_policy_init(&p);
	assert_int_equal(isle__spank_resolve(&p, &u, &out, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "not installed"));
}

/*
 * GPU indices of a node from the controller's GRES detail (what the job
 * prolog passes per node instead of this node's SLURM_JOB_GPUS).
 */
static void test_gres_gpu_idx(void **state)
{
	static const struct {
		const char *in, *out;
		int rc;
	} cases[] = {
	    {"gpu:4(IDX:0-3)", "0-3", 0},
	    {"gpu:2(IDX:1-2)", "1-2", 0},
	    {"gpu:2(IDX:0,2)", "0,2", 0},
	    {"gpu:a100:1(IDX:0),gpu:h100:2(IDX:2,5)", "0,2,5", 0},
	    {"nic:1(IDX:0),gpu:1(IDX:3),mps:100(CNT:100)", "3", 0},
	    {"gpuz:1(IDX:1)", "", 0},
	    {"gpu(CNT:2)", "", 0},
	    {"", "", 0},
	    {NULL, "", 0},
	    {"gpu:1(IDX:0", NULL, -EINVAL},
	    {"gpu:1(IDX:a)", NULL, -EINVAL},
	    {"gpu:1)(", NULL, -EINVAL},
	};
	char out[64], tiny[3];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = isle__gres_gpu_idx(cases[i].in, out, sizeof(out));

		if (rc != cases[i].rc ||
		    (cases[i].out && strcmp(out, cases[i].out)))
			fail_msg("'%s': rc %d out '%s'",
				 cases[i].in ? cases[i].in : "(null)", rc, out);
	}
	assert_int_equal(
	    isle__gres_gpu_idx("gpu:4(IDX:0-3)", tiny, sizeof(tiny)),
	    -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tp_pp),
	    cmocka_unit_test(test_mode_span_shim),
	    cmocka_unit_test(test_env_roundtrip),
	    cmocka_unit_test(test_compress),
	    cmocka_unit_test(test_policy),
	    cmocka_unit_test(test_resolve),
	    cmocka_unit_test(test_gres_gpu_idx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
