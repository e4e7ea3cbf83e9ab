/*
 * test_agent_plan.c - `isle-agent plan`: GPU lists, codec policy, levels and
 * codecs of real layouts, the files it writes (checked with comm_shim's own
 * plan reader) and the run directory's ownership and symlink safety.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "isle_agent.h"
#include "isle_proto.h"
#include "isle_topo.h"
#include "plan.h"

/* ------------------------------------------------------- index lists */

static void test_index_list(void **state)
{
	uint64_t m = 0;
	char err[256];

	assert_int_equal(isle__index_list_parse("0-3", &m, err, sizeof(err)),
			 0);
	assert_int_equal(m, 0xf);
	assert_int_equal(isle__index_list_parse("2,3,6", &m, err, sizeof(err)),
			 0);
	assert_int_equal(m, 0x4c);
	assert_int_equal(isle__index_list_parse("63", &m, NULL, 0), 0);
	assert_true(m == 1ULL << 63);
	assert_int_equal(isle__index_list_parse("64", &m, err, sizeof(err)),
			 -ERANGE);
	assert_int_equal(isle__index_list_parse("1,1", &m, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "repeated"));
	assert_int_equal(isle__index_list_parse("", &m, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(isle__index_list_parse("0,", &m, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(isle__index_list_parse("3-1", &m, NULL, 0), -EINVAL);
}

/* --------------------------------------------------------------- codecs */

static void test_codec_policy(void **state)
{
	static const char *const good[] = {
	    "none",    "fp16",	      "bf16",	   "int8",
	    "int8:64", "int8:256,ef", "topk:0.01", "topk:1,noef"};
	static const char *const bad[] = {"zip",      "int8:7",	   "int8:0",
					  "topk",     "topk:0",	   "topk:1.5",
					  "bf16,foo", "int8:99999"};
	struct isle__codec_policy p;
	char err[256];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(isle__codec_check(good[i], err, sizeof(err)),
				 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct isle_codec c;

		assert_int_equal(isle__codec_check(bad[i], err, sizeof(err)),
				 -EINVAL);
		/* The shim's parser agrees on what is bad. */
		assert_true(isle_codec_parse(bad[i], &c, NULL, 0) < 0);
	}

	isle__codec_policy_default(&p);
	assert_string_equal(p.codec[ISLE_TIER_ISLAND], "none");
	assert_string_equal(p.codec[ISLE_TIER_LEAF], "int8");
	assert_string_equal(p.codec[ISLE_TIER_SPINE], "int8");
	assert_int_equal(isle__codec_policy_parse(
			     &p, "leaf=fp16,spine=topk:0.01,noef core=int8:64",
			     err, sizeof(err)),
			 0);
	assert_string_equal(p.codec[ISLE_TIER_LEAF], "fp16");
	assert_string_equal(p.codec[ISLE_TIER_SPINE], "topk:0.01,noef");
	assert_string_equal(p.codec[ISLE_TIER_CORE], "int8:64");
	/* Flags after the codec, mom=M included, stay with it. */
	assert_int_equal(
	    isle__codec_policy_parse(&p, "spine=topk:0.01,mom=0.9,leaf=bf16",
				     err, sizeof(err)),
	    0);
	assert_string_equal(p.codec[ISLE_TIER_SPINE], "topk:0.01,mom=0.9");
	assert_string_equal(p.codec[ISLE_TIER_LEAF], "bf16");
	assert_int_equal(isle__codec_policy_parse(&p, "spine=topk:0.01,mom=1",
						  err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "mom must be in [0, 1)"));
	assert_int_equal(
	    isle__codec_policy_parse(&p, "rack=bf16", err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "rack"));
	assert_int_equal(
	    isle__codec_policy_parse(&p, "leaf=lz4", err, sizeof(err)),
	    -EINVAL);
	assert_int_equal(isle__codec_policy_parse(&p, "bf16", err, sizeof(err)),
			 -EINVAL);
}

/* -------------------------------------------------------------- layouts */

static void finalize_ok(isle_topo *t)
{
	char err[256] = "";

	if (isle_topo_finalize(t, err, sizeof(err)))
		fail_msg("finalize: %s", err);
}

/*
 * GB200-like: nracks racks of nper nodes x 4 GPUs, each rack one NVLink
 * domain, racks_per_leaf racks under each leaf switch, one spine. Each GPU
 * has its own NIC (rail g) on the rack's leaf.
 */
static isle_topo *gb200(int nracks, int nper, int racks_per_leaf,
			double spine_oversub)
{
	isle_topo *t = isle_topo_create();
	int spine, leaf = -1;

	assert_non_null(t);
	t->tier[ISLE_TIER_SPINE].oversub = spine_oversub;
	spine = isle_topo_add_switch(t, "spine0", 0x100, ISLE_SW_SPINE);
	for (int r = 0; r < nracks; r++) {
		int nodes[32];
		char name[32];

		if (r % racks_per_leaf == 0) {
			snprintf(name, sizeof(name), "leaf%d",
				 r / racks_per_leaf);
			leaf = isle_topo_add_switch(t, name, 0x200 + r,
						    ISLE_SW_LEAF);
			assert_int_equal(
			    isle_topo_link_switches(t, spine, leaf), 0);
		}
		for (int i = 0; i < nper; i++) {
			int n;

			snprintf(name, sizeof(name), "n%02d", r * nper + i + 1);
			n = isle_topo_add_node(t, name, 4);
			assert_true(n >= 0);
			for (int g = 0; g < 4; g++) {
				char nic[24];
				int k;

				snprintf(nic, sizeof(nic), "mlx5_%d", g);
				k = isle_topo_add_nic(t, n, nic,
						      0x1000 + n * 4 + g, g,
						      400, g / 2);
				assert_int_equal(k, g);
				assert_int_equal(
				    isle_topo_set_gpu_nic(t, n, g, k), 0);
				assert_int_equal(
				    isle_topo_attach_node(t, leaf, n, k), 0);
			}
			nodes[i] = n;
		}
		snprintf(name, sizeof(name), "rack%d", r);
		assert_true(isle_topo_add_domain(t, name, nodes, nper, 900) >=
			    0);
	}
	finalize_ok(t);
	return t;
}

/* PCIe servers: 8 GPUs with NVLink pairs (0,1) (2,3) ..., one leaf. */
static isle_topo *pcie_pairs(int nnodes)
{
	isle_topo *t = isle_topo_create();
	int leaf = isle_topo_add_switch(t, "leafA", 0x300, ISLE_SW_LEAF);

	for (int i = 0; i < nnodes; i++) {
		char name[16];
		int n;

		snprintf(name, sizeof(name), "p%d", i + 1);
		n = isle_topo_add_node(t, name, 8);
		for (int g = 0; g < 8; g += 2)
			assert_int_equal(
			    isle_topo_set_nvlink(t, n, g, g + 1, 4), 0);
		assert_true(isle_topo_add_nic(t, n, "mlx5_0", 0x400 + i, -1,
					      200, 0) >= 0);
		assert_int_equal(isle_topo_attach_node(t, leaf, n, 0), 0);
	}
	finalize_ok(t);
	return t;
}

/* policy: the admin's codec_policy over the defaults, or NULL */
static struct isle__plan *build_pol(const isle_topo *t, const char *nodes,
				    const char *gpus, const char *compress,
				    const char *policy)
{
	struct isle__plan_req req = {
	    .job_id = "42",
	    .nodes = nodes,
	    .compress = compress,
	};
	struct isle__plan *p = NULL;
	char err[256] = "";

	isle__codec_policy_default(&req.policy);
	if (policy)
		assert_int_equal(isle__codec_policy_parse(&req.policy, policy,
							  err, sizeof(err)),
				 0);
	assert_int_equal(isle__index_list_parse(gpus, &req.gpus, NULL, 0), 0);
	if (isle__plan_build(t, &req, &p, err, sizeof(err)))
		fail_msg("plan %s: %s", nodes, err);
	return p;
}

static struct isle__plan *build(const isle_topo *t, const char *nodes,
				const char *gpus, const char *compress)
{
	return build_pol(t, nodes, gpus, compress, NULL);
}

/* Emits plan.json and loads it back with the shim's reader. */
static struct isle_plan *roundtrip(const struct isle__plan *p)
{
	struct isle_plan *sp = NULL;
	char *buf = NULL, err[256] = "";
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(isle__plan_emit_json(p, f), 0);
	assert_int_equal(fclose(f), 0);
	if (isle_plan_parse(buf, len, "plan.json", &sp, err, sizeof(err)))
		fail_msg("the shim rejects the plan: %s\n%s", err, buf);
	free(buf);
	return sp;
}

static void assert_level(const struct isle_plan *sp, int i, const char *name,
			 isle_scope scope, const char *codec)
{
	char buf[64];

	assert_string_equal(sp->levels[i].name, name);
	assert_int_equal(sp->levels[i].scope, scope);
	assert_true(isle_codec_format(&sp->levels[i].codec, buf, sizeof(buf)) >
		    0);
	assert_string_equal(buf, codec);
	assert_true(sp->levels[i].bw_gbps > 0);
}

static void test_gb200_one_domain(void **state)
{
	isle_topo *t = gb200(2, 4, 1, 2.0);
	struct isle__plan *p = build(t, "n[01-02]", "0-3", NULL);
	struct isle_plan *sp = roundtrip(p);

	/* Both nodes in one NVLink domain: NVLink is the whole job. */
	assert_int_equal(sp->nranks, 8);
	assert_int_equal(sp->nlevels, 1);
	assert_level(sp, 0, "nvlink", ISLE_SCOPE_JOB, "none");
	assert_true(sp->levels[0].bw_gbps == 900);
	for (int r = 0; r < 8; r++) {
		assert_string_equal(sp->ranks[r].node, r < 4 ? "n01" : "n02");
		assert_int_equal(sp->ranks[r].gpu, r % 4);
		assert_string_equal(sp->ranks[r].island, "rack0");
		assert_string_equal(sp->ranks[r].leaf, "leaf0");
	}
	isle_plan_destroy(sp);
	isle__plan_free(p);
	isle_topo_destroy(t);
}

/* Islands {n01, n03} and {n02, n04}: hostlist order keeps n01 n02 n03 n04,
 * topology order (Slurm 26.05's get_rank) walks the islands. */
static void test_rank_order(void **state)
{
	static const char *const want[2][4] = {{"n01", "n02", "n03", "n04"},
					       {"n01", "n03", "n02", "n04"}};
	isle_topo *t = isle_topo_create();
	int leaf = isle_topo_add_switch(t, "leaf0", 0x100, ISLE_SW_LEAF);
	int n[4], a[2], b[2];

	for (int i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "n%02d", i + 1);
		n[i] = isle_topo_add_node(t, name, 2);
		assert_int_equal(isle_topo_attach_node(t, leaf, n[i], -1), 0);
	}
	a[0] = n[0], a[1] = n[2], b[0] = n[1], b[1] = n[3];
	assert_true(isle_topo_add_domain(t, "nvlA", a, 2, 900) >= 0);
	assert_true(isle_topo_add_domain(t, "nvlB", b, 2, 900) >= 0);
	finalize_ok(t);
	for (int topo = 0; topo < 2; topo++) {
		struct isle__plan_req req = {.job_id = "7",
					     .nodes = "n[01-04]",
					     .gpus = 0x3,
					     .topo_order = topo};
		struct isle__plan *p = NULL;
		struct isle_plan *sp;
		char err[256] = "";

		isle__codec_policy_default(&req.policy);
		if (isle__plan_build(t, &req, &p, err, sizeof(err)))
			fail_msg("plan: %s", err);
		sp = roundtrip(p);
		assert_int_equal(sp->nranks, 8);
		for (int r = 0; r < 8; r++) {
			assert_string_equal(sp->ranks[r].node,
					    want[topo][r / 2]);
			assert_int_equal(sp->ranks[r].gpu, r % 2);
		}
		isle_plan_destroy(sp);
		isle__plan_free(p);
	}
	isle_topo_destroy(t);
}

static void test_gb200_three_levels(void **state)
{
	/* 4 racks of 2 nodes, 2 racks per leaf, oversubscribed spine. */
	isle_topo *t = gb200(4, 2, 2, 2.0);
	struct isle__plan *p = build(t, "n01,n03,n05", "0-3", NULL);
	struct isle_plan *sp = roundtrip(p);

	assert_int_equal(sp->nranks, 12);
	assert_int_equal(sp->nlevels, 3);
	assert_level(sp, 0, "nvlink", ISLE_SCOPE_ISLAND, "none");
	assert_level(sp, 1, "leaf", ISLE_SCOPE_LEAF, "int8:256");
	assert_level(sp, 2, "spine", ISLE_SCOPE_JOB, "int8:256");
	assert_string_equal(sp->ranks[0].island, "rack0");
	assert_string_equal(sp->ranks[4].island, "rack1");
	assert_string_equal(sp->ranks[8].island, "rack2");
	assert_string_equal(sp->ranks[4].leaf, "leaf0");
	assert_string_equal(sp->ranks[8].leaf, "leaf1");
	assert_string_equal(sp->ranks[9].nic, "mlx5_1");
	isle_plan_destroy(sp);
	isle__plan_free(p);

	/* The user's codec covers the network levels only... */
	p = build(t, "n01,n03,n05", "0-3", "topk:0.01");
	sp = roundtrip(p);
	assert_level(sp, 0, "nvlink", ISLE_SCOPE_ISLAND, "none");
	assert_level(sp, 1, "leaf", ISLE_SCOPE_LEAF, "topk:0.01");
	assert_level(sp, 2, "spine", ISLE_SCOPE_JOB, "topk:0.01");
	isle_plan_destroy(sp);
	isle__plan_free(p);

	/* ...and "none" turns compression off everywhere. */
	p = build(t, "n01,n03,n05", "0-3", "none");
	sp = roundtrip(p);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sp->levels[i].codec.kind, ISLE_CODEC_NONE);
	isle_plan_destroy(sp);
	isle__plan_free(p);
	isle_topo_destroy(t);

	/* A non-blocking spine keeps the leaf codec (the defaults give
	 * both int8: a leaf codec of its own tells them apart). */
	t = gb200(4, 2, 2, 1.0);
	p = build(t, "n01,n05", "0-3", NULL);
	sp = roundtrip(p);
	assert_int_equal(sp->nlevels, 2);
	assert_level(sp, 1, "spine", ISLE_SCOPE_JOB, "int8:256");
	isle_plan_destroy(sp);
	isle__plan_free(p);
	p = build_pol(t, "n01,n05", "0-3", NULL, "leaf=bf16");
	sp = roundtrip(p);
	assert_level(sp, 1, "spine", ISLE_SCOPE_JOB, "bf16");
	isle_plan_destroy(sp);
	isle__plan_free(p);
	isle_topo_destroy(t);
}

static void test_pcie_pairs(void **state)
{
	isle_topo *t = pcie_pairs(2);
	struct isle__plan *p = build(t, "p1", "0-3", NULL);
	struct isle_plan *sp = roundtrip(p);

	/* Two NVLink pairs in one node meet over PCIe. */
	assert_int_equal(sp->nlevels, 2);
	assert_level(sp, 0, "nvlink", ISLE_SCOPE_ISLAND, "none");
	assert_level(sp, 1, "pcie", ISLE_SCOPE_JOB, "none");
	assert_string_equal(sp->ranks[0].island, sp->ranks[1].island);
	assert_string_not_equal(sp->ranks[1].island, sp->ranks[2].island);
	isle_plan_destroy(sp);
	isle__plan_free(p);

	p = build(t, "p[1-2]", "2-5", NULL);
	sp = roundtrip(p);
	assert_int_equal(sp->nranks, 8);
	assert_int_equal(sp->nlevels, 3);
	assert_level(sp, 0, "nvlink", ISLE_SCOPE_ISLAND, "none");
	assert_level(sp, 1, "pcie", ISLE_SCOPE_NODE, "none");
	assert_level(sp, 2, "leaf", ISLE_SCOPE_JOB, "int8:256");
	assert_int_equal(sp->ranks[0].gpu, 2);
	assert_int_equal(sp->ranks[7].gpu, 5);
	isle_plan_destroy(sp);
	isle__plan_free(p);

	/* Unpaired GPUs 1 and 2: no NVLink level at all. */
	p = build(t, "p1", "1-2", NULL);
	sp = roundtrip(p);
	assert_int_equal(sp->nlevels, 1);
	assert_level(sp, 0, "pcie", ISLE_SCOPE_JOB, "none");
	isle_plan_destroy(sp);
	isle__plan_free(p);
	isle_topo_destroy(t);
}

static void test_per_node_gpus(void **state)
{
	isle_topo *t = pcie_pairs(2);
	const char *names[] = {"p2"};
	uint64_t masks[] = {0xc0};
	struct isle__plan_req req = {
	    .job_id = "7",
	    .nodes = "p[1-2]",
	    .gpus = 0x3,
	    .noverride = 1,
	    .override_node = names,
	    .override_gpus = masks,
	    .local_node = "p2",
	};
	struct isle__plan *p = NULL;
	char err[256];

	isle__codec_policy_default(&req.policy);
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)), 0);
	assert_int_equal(p->nranks, 4);
	assert_int_equal(p->ranks[2].gpu, 6);
	assert_int_equal(p->ranks[3].gpu, 7);
	assert_int_equal(p->local_node, isle_topo_find_node(t, "p2"));
	assert_true(p->local_gpus == 0xc0);
	isle__plan_free(p);
	isle_topo_destroy(t);
}

static void test_bad_inputs(void **state)
{
	isle_topo *t = gb200(1, 2, 1, 1.0);
	struct isle__plan_req req = {.job_id = "9", .gpus = 0xf};
	struct isle__plan *p = (void *)1;
	char err[256];

	isle__codec_policy_default(&req.policy);
	req.nodes = "n01,x99";
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -ENOENT);
	assert_null(p);
	assert_non_null(strstr(err, "x99"));

	req.nodes = "n01";
	req.gpus = 0x10;
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "index 4"));

	req.gpus = 0xf;
	req.nodes = "n[01-02],n01";
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "twice"));

	req.nodes = "n01";
	req.local_node = "n02";
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -EINVAL);
	req.local_node = NULL;

	req.compress = "gzip";
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "gzip"));
	req.compress = NULL;

	req.gpus = 0;
	assert_int_equal(isle__plan_build(t, &req, &p, err, sizeof(err)),
			 -EINVAL);
	isle_topo_destroy(t);
}

static char *emit_to_string(const struct isle__plan *p, int which)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (which == 0)
		assert_int_equal(isle__plan_emit_nccl_env(p, "/x/topo.xml", f),
				 0);
	else
		assert_int_equal(isle_emit_nccl_xml(p->topo, p->local_node, f),
				 0);
	fclose(f);
	return buf;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

static void test_nccl_files(void **state)
{
	isle_topo *t = gb200(2, 2, 1, 2.0);
	struct isle__plan_req req = {.job_id = "5",
				     .nodes = "n[01-02]",
				     .gpus = 0x6,
				     .local_node = "n02"};
	struct isle__plan *p = NULL;
	char *env, *xml;

	isle__codec_policy_default(&req.policy);
	assert_int_equal(isle__plan_build(t, &req, &p, NULL, 0), 0);
	env = emit_to_string(p, 0);
	/* GPUs 1 and 2 use rails 1 and 2: only those NICs, same rail. */
	assert_non_null(strstr(env, "\nNCCL_IB_HCA==mlx5_1,mlx5_2\n"));
	assert_non_null(strstr(env, "\nNCCL_CROSS_NIC=0\n"));
	assert_non_null(strstr(env, "\nNCCL_TOPO_FILE=/x/topo.xml\n"));
	assert_non_null(strstr(env, "\nNCCL_MNNVL_ENABLE=1\n"));
	xml = emit_to_string(p, 1);
	/* The XML describes the local node n02 as a whole. */
	assert_non_null(strstr(xml, "<system version=\"1\">"));
	assert_non_null(strstr(xml, "n02"));
	assert_int_equal(count(xml, "<gpu "), 4);
	assert_int_equal(count(xml, "<net "), 4);
	free(env);
	free(xml);
	isle__plan_free(p);
	isle_topo_destroy(t);

	/* One leaf, no rails: NCCL may cross NICs. */
	t = pcie_pairs(1);
	req.nodes = "p1";
	req.local_node = NULL;
	assert_int_equal(isle__plan_build(t, &req, &p, NULL, 0), 0);
	env = emit_to_string(p, 0);
	assert_non_null(strstr(env, "\nNCCL_IB_HCA==mlx5_0\n"));
	assert_non_null(strstr(env, "\nNCCL_CROSS_NIC=1\n"));
	assert_null(strstr(env, "MNNVL"));
	free(env);
	isle__plan_free(p);
	isle_topo_destroy(t);
}

/* ------------------------------------------------------------- run dir */

struct tmp {
	char root[256];
	int rootfd;
};

static int tmp_setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));
	char err[256];

	snprintf(t->root, sizeof(t->root), "/tmp/isle-plan-test.XXXXXX");
	if (!mkdtemp(t->root))
		return -1;
	chmod(t->root, 0755);
	/* Created with its parents: the root is a subdirectory. */
	strcat(t->root, "/run/isle");
	t->rootfd = isle__rundir_open_root(t->root, err, sizeof(err));
	if (t->rootfd < 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmp *t = *state;
	char cmd[300];

	close(t->rootfd);
	*strstr(t->root, "/run/isle") = '\0';
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	if (system(cmd))
		return -1;
	free(t);
	return 0;
}

/* In a child with uid and gid (and no other group): can it read path? */
static int can_read_as(const char *path, uid_t uid, gid_t gid)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		char c;
		int fd;

		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(2);
		fd = open(path, O_RDONLY);
		_exit(fd >= 0 && read(fd, &c, 1) == 1 ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 0;
}

static void test_rundir_write(void **state)
{
	struct tmp *t = *state;
	/* Root hands the files to another user; others keep them. */
	uid_t reader = geteuid() == 0 ? 65534 : (uid_t)-1;
	struct isle__rundir_file files[] = {
	    {"plan.json", "{}\n", 3},
	    {"nccl.env", "A=1\n", 4},
	};
	char path[512], err[256];
	struct stat st;

	assert_int_equal(isle__rundir_write(t->rootfd, "101", reader, files, 2,
					    err, sizeof(err)),
			 0);
	/* The user reads, but owns and can write nothing: root keeps it,
	 * group root, the group bits the ACL mask (r-x / r--). */
	snprintf(path, sizeof(path), "%s/101", t->root);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, geteuid() == 0 ? 0750 : 0700);
	assert_int_equal(st.st_uid, geteuid());
	snprintf(path, sizeof(path), "%s/101/plan.json", t->root);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, geteuid() == 0 ? 0640 : 0600);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_size, 3);
	if (geteuid() == 0) {
		/* Group root, and the group is no way in (finding 2): the
		 * reader can, another user of the reader's group or of
		 * root's group cannot. */
		assert_int_equal(st.st_gid, 0);
		assert_int_equal(
		    getxattr(path, "system.posix_acl_access", NULL, 0), 44);
		assert_int_equal(can_read_as(path, 65534, 65534), 1);
		assert_int_equal(can_read_as(path, 65533, 65534), 0);
		assert_int_equal(can_read_as(path, 65533, 0), 0);
		/* The one thing the job's user owns: its report dir. */
		char rdir[600];

		snprintf(rdir, sizeof(rdir), "%s/101/report", t->root);
		assert_int_equal(lstat(rdir, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(st.st_uid, 65534);
		assert_int_equal(st.st_mode & 07777, 0700);
	}

	/* Rewriting (a requeued job) starts afresh. */
	assert_int_equal(isle__rundir_write(t->rootfd, "101", reader, files + 1,
					    1, err, sizeof(err)),
			 0);
	assert_int_equal(lstat(path, &st), -1);

	assert_int_equal(isle_rundir_remove(t->rootfd, "101", err, sizeof(err)),
			 0);
	snprintf(path, sizeof(path), "%s/101", t->root);
	assert_int_equal(lstat(path, &st), -1);
	/* Removing twice is fine (epilog after a failed prolog). */
	assert_int_equal(isle_rundir_remove(t->rootfd, "101", err, sizeof(err)),
			 0);

	assert_int_equal(isle__rundir_write(t->rootfd, "../x", reader, files, 1,
					    err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(isle_rundir_check_id("..", NULL, 0), -EINVAL);
	assert_int_equal(isle_rundir_check_id("a/b", NULL, 0), -EINVAL);
	assert_int_equal(isle_rundir_check_id("123_4.x", NULL, 0), 0);
}

static void test_rundir_symlinks(void **state)
{
	struct tmp *t = *state;
	struct isle__rundir_file f = {"plan.json", "{}\n", 3};
	char base[400], victim[600], path[600], link[600], err[1024];
	struct stat st;
	int fd;

	/* A file outside the tree that links inside point to. */
	snprintf(base, sizeof(base), "%s", t->root);
	*strrchr(base, '/') = '\0'; /* the root's parent */
	snprintf(victim, sizeof(victim), "%s/victim", base);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);

	/* The user planted links in an old job directory... */
	snprintf(path, sizeof(path), "%s/202", t->root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(link, sizeof(link), "%s/202/plan.json", t->root);
	assert_int_equal(symlink(victim, link), 0);
	snprintf(link, sizeof(link), "%s/202/sub", t->root);
	assert_int_equal(mkdir(link, 0755), 0);
	snprintf(link, sizeof(link), "%s/202/sub/up", t->root);
	assert_int_equal(symlink(t->root, link), 0);
	/* ...and a job id that is itself a link. */
	snprintf(link, sizeof(link), "%s/203", t->root);
	assert_int_equal(symlink(path, link), 0);

	assert_int_equal(isle__rundir_write(t->rootfd, "202", (uid_t)-1, &f, 1,
					    err, sizeof(err)),
			 0);
	assert_int_equal(isle_rundir_remove(t->rootfd, "202", err, sizeof(err)),
			 0);
	assert_int_equal(isle_rundir_remove(t->rootfd, "203", err, sizeof(err)),
			 0);
	/* Nothing outside was touched or followed. */
	assert_int_equal(lstat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(lstat(t->root, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(lstat(link, &st), -1);

	/* A run root that is a symlink or writable by others is refused. */
	snprintf(link, sizeof(link), "%s/rootlink", base);
	assert_int_equal(symlink(t->root, link), 0);
	assert_true(isle__rundir_open_root(link, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "rootlink is a symbolic link"));
	snprintf(path, sizeof(path), "%s/open", base);
	assert_int_equal(mkdir(path, 0777), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(isle__rundir_open_root(path, err, sizeof(err)),
			 -EPERM);
}

/*
 * A job directory left by a user who could write it (older versions handed
 * it over): 40 nested directories with 8 MB of data at the bottom, a
 * symlink to a directory outside and one to a file outside at every level.
 * Removal takes it all (the old walk stopped at depth 16 and left the data
 * on /run) and touches nothing the links point to.
 */
static void test_rundir_remove_deep(void **state)
{
	struct tmp *t = *state;
	char outside[400], victim[512], err[256], name[16];
	static char chunk[1 << 20];
	struct stat st;
	int fd, dfd;

	snprintf(outside, sizeof(outside), "%s/../outside", t->root);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(victim, sizeof(victim), "%s/keep", outside);
	fd = open(victim, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);

	assert_int_equal(mkdirat(t->rootfd, "303", 0755), 0);
	dfd = openat(t->rootfd, "303", O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	for (int depth = 0; depth < 40; depth++) {
		int sub;

		assert_int_equal(symlinkat(outside, dfd, "dirlink"), 0);
		assert_int_equal(symlinkat(victim, dfd, "filelink"), 0);
		snprintf(name, sizeof(name), "d%d", depth);
		assert_int_equal(mkdirat(dfd, name, 0700), 0);
		sub = openat(dfd, name, O_RDONLY | O_DIRECTORY);
		assert_true(sub >= 0);
		close(dfd);
		dfd = sub;
	}
	memset(chunk, 'x', sizeof(chunk));
	fd = openat(dfd, "data", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(write(fd, chunk, sizeof(chunk)),
				 (ssize_t)sizeof(chunk));
	close(fd);
	close(dfd);

	assert_int_equal(isle_rundir_remove(t->rootfd, "303", err, sizeof(err)),
			 0);
	assert_int_equal(fstatat(t->rootfd, "303", &st, AT_SYMLINK_NOFOLLOW),
			 -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(lstat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(lstat(outside, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* ------------------------------------------------------ the subcommand */

static int run_plan(const char *const *args)
{
	char *argv[32];
	int argc = 0;

	while (args[argc]) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	return isle_agent_cmd_plan.run(argc, argv);
}

static char *read_file(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_cmd_write_remove(void **state)
{
	struct tmp *t = *state;
	isle_topo *topo = gb200(2, 2, 1, 2.0);
	char cluster[512], path[600], err[256], *text;
	struct isle_plan *sp = NULL;
	const char *write_ok[] = {
	    "plan",	 "write",	    "--job",	"77",	  "--nodes",
	    "n[01-02]",	 "--gpus-per-node", "0-3",	"--node", "n02",
	    "--cluster", cluster,	    "--rundir", t->root,  NULL};
	const char *write_bad[] = {
	    "plan",	"write",	   "--job", "78",	 "--nodes",
	    "n01,x1",	"--gpus-per-node", "0-3",   "--cluster", cluster,
	    "--rundir", t->root,	   NULL};
	const char *remove[] = {"plan",	    "remove", "--job", "77",
				"--rundir", t->root,  NULL};
	const char *usage[] = {"plan", "write", "--job", "1", NULL};

	snprintf(cluster, sizeof(cluster), "%s/../cluster.json", t->root);
	assert_int_equal(isle_topo_save(topo, cluster, err, sizeof(err)), 0);
	isle_topo_destroy(topo);

	assert_int_equal(run_plan(write_ok), 0);
	snprintf(path, sizeof(path), "%s/77/plan.json", t->root);
	if (isle_plan_read(path, &sp, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(sp->nranks, 8);
	isle_plan_destroy(sp);
	snprintf(path, sizeof(path), "%s/77/nccl.env", t->root);
	text = read_file(path);
	assert_non_null(text);
	/* Written for n02, pointing at its own run dir. */
	assert_non_null(strstr(text, "on n02"));
	assert_non_null(strstr(text, "/77/nccl-topo.xml\n"));

	/* A node the cluster file does not know: exit 1, the reason kept. */
	assert_int_equal(run_plan(write_bad), 1);
	snprintf(path, sizeof(path), "%s/78/plan.json", t->root);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/78/error", t->root);
	text = read_file(path);
	assert_non_null(text);
	assert_non_null(strstr(text, "node 'x1' is not in the cluster file"));

	assert_int_equal(run_plan(remove), 0);
	snprintf(path, sizeof(path), "%s/77", t->root);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(run_plan(usage), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_index_list),
	    cmocka_unit_test(test_codec_policy),
	    cmocka_unit_test(test_gb200_one_domain),
	    cmocka_unit_test(test_rank_order),
	    cmocka_unit_test(test_gb200_three_levels),
	    cmocka_unit_test(test_pcie_pairs),
	    cmocka_unit_test(test_per_node_gpus),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_nccl_files),
	    cmocka_unit_test_setup_teardown(test_rundir_write, tmp_setup,
					    tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_rundir_remove_deep, tmp_setup,
					    tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_rundir_symlinks, tmp_setup,
					    tmp_teardown),
	    cmocka_unit_test_setup_teardown(test_cmd_write_remove, tmp_setup,
					    tmp_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
