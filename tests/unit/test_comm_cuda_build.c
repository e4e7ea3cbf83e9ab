/*
 * test_comm_cuda_build.c - libisle_nccl.so as built here, without a GPU:
 * it loads into a CUDA program with every symbol resolved (its CUDA calls
 * bind to the program's runtime), exports only the interposed NCCL
 * entry points and the CUDA codec table, forwards what it does not handle
 * to the real NCCL, rejects bad codec arguments, fails cleanly (an error,
 * not a crash) where no GPU exists, and refuses to run with a bad plan.
 * The GPU behaviour itself is checked by tests/gpu/run-gpu-check.sh.
 */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <nccl.h>

#include "isle_comm.h"

#ifndef ISLE_NCCL_SO
#define ISLE_NCCL_SO "build/lib/libisle_nccl.so"
#endif
#ifndef ISLE_NCCL_REAL
#define ISLE_NCCL_REAL "libnccl.so.2"
#endif

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t,
				     ncclDataType_t, ncclRedOp_t, ncclComm_t,
				     cudaStream_t);
typedef const struct isle_codec_ops *(*ops_fn)(void);

static void *open_shim(void)
{
	void *h = dlopen(ISLE_NCCL_SO, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fail_msg("dlopen %s: %s", ISLE_NCCL_SO, dlerror());
	return h;
}

static void test_exports(void **state)
{
	static const char *exported[] = {
	    "ncclAllReduce",   "ncclGroupStart", "ncclGroupEnd",
	    "ncclCommDestroy", "ncclCommAbort",	 "isle_codec_cuda_ops"};
	/* Internals and the bundled comm library stay hidden. */
	static const char *hidden[] = {"isle__topk_ratio_at", "isle_plan_read",
				       "isle_codec_cpu_ops", "hier_setup"};
	void *h = open_shim();

	for (size_t i = 0; i < sizeof(exported) / sizeof(exported[0]); i++)
		assert_non_null(dlsym(h, exported[i]));
	/* dlsym on a handle also searches its dependencies, so look at the
	 * symbol's own object. */
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
		void *p = dlsym(h, hidden[i]);
		Dl_info info;

		if (p && dladdr(p, &info))
			assert_null(strstr(info.dli_fname, "libisle_nccl"));
	}
	dlclose(h);
}

/* What the shim does not handle reaches the real NCCL unchanged. */
static void test_passthrough(void **state)
{
	void *h = open_shim(), *real_lib;
	allreduce_fn shim = (allreduce_fn)dlsym(h, "ncclAllReduce"), real;
	ncclResult_t a, b;
	int buf[4] = {0};

	real_lib = dlopen(ISLE_NCCL_REAL, RTLD_NOW | RTLD_LOCAL);
	if (!real_lib)
		fail_msg("dlopen %s: %s", ISLE_NCCL_REAL, dlerror());
	real = (allreduce_fn)dlsym(real_lib, "ncclAllReduce");
	assert_non_null(shim);
	assert_non_null(real);
	assert_ptr_not_equal(shim, real);

	/* int32 sum on a NULL communicator: NCCL's own argument check. */
	a = shim(buf, buf, 4, ncclInt32, ncclSum, NULL, NULL);
	b = real(buf, buf, 4, ncclInt32, ncclSum, NULL, NULL);
	assert_int_not_equal(a, ncclSuccess);
	assert_int_equal(a, b);
	/* A float sum would be ours: setup fails the same way, no crash. */
	a = shim(buf, buf, 4, ncclFloat32, ncclSum, NULL, NULL);
	assert_int_not_equal(a, ncclSuccess);
	dlclose(real_lib);
	dlclose(h);
}

static void test_codec_args(void **state)
{
	void *h = open_shim();
	ops_fn get = (ops_fn)dlsym(h, "isle_codec_cuda_ops");
	const struct isle_codec_ops *ops;
	struct isle_codec c = {.kind = ISLE_CODEC_INT8, .block = 0};
	float x[8] = {0};
	char enc[256];

	assert_non_null(get);
	ops = get();
	assert_string_equal(ops->name, "cuda");
	assert_int_equal(ops->encode(&c, x, 8, enc, NULL, NULL), -EINVAL);
	assert_int_equal(ops->decode(&c, enc, 8, x, NULL), -EINVAL);
	c = (struct isle_codec){.kind = ISLE_CODEC_COUNT};
	assert_int_equal(ops->encode(&c, x, 8, enc, NULL, NULL), -EINVAL);
	c = (struct isle_codec){.kind = ISLE_CODEC_FP16};
	assert_int_equal(ops->encode(&c, NULL, 8, enc, NULL, NULL), -EINVAL);
	assert_int_equal(ops->decode_acc(&c, enc, 8, NULL, NULL), -EINVAL);
	assert_int_equal(ops->encode(NULL, x, 8, enc, NULL, NULL), -EINVAL);
	dlclose(h);
}

/* Without a GPU every codec reports an error instead of crashing. */
static void test_no_gpu(void **state)
{
	static const isle_codec_kind kinds[] = {
	    ISLE_CODEC_NONE, ISLE_CODEC_FP16, ISLE_CODEC_BF16, ISLE_CODEC_INT8,
	    ISLE_CODEC_TOPK};
	void *h = open_shim();
	/* The program's own CUDA runtime: the backend links none. */
	int (*count)(int *) =
	    (int (*)(int *))dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
	const struct isle_codec_ops *ops =
	    ((ops_fn)dlsym(h, "isle_codec_cuda_ops"))();
	float x[64] = {1}, y[64];
	char enc[1024];
	int n = 0;

	assert_non_null(count);
	if (count(&n) == 0 && n > 0) {
		dlclose(h);
		printf("SKIP: a GPU is here: tests/gpu/ runs the codecs\n");
		skip();
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct isle_codec c = {
		    .kind = kinds[i], .block = 8, .ratio = 0.25};

		assert_true(ops->encode(&c, x, 64, enc, NULL, NULL) < 0);
		assert_true(ops->decode(&c, enc, 64, y, NULL) < 0);
	}
	dlclose(h);
}

/* A bad ISLE_PLAN makes every shimmed call fail, with a message. */
static void test_bad_plan(void **state)
{
	int fds[2], st;
	pid_t pid;
	char msg[512] = "";
	ssize_t got;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		void *h;
		allreduce_fn f;
		float buf[4] = {0};

		dup2(fds[1], 2);
		setenv("ISLE_PLAN", "/nonexistent/isle-plan.json", 1);
		h = dlopen(ISLE_NCCL_SO, RTLD_NOW | RTLD_LOCAL);
		f = h ? (allreduce_fn)dlsym(h, "ncclAllReduce") : NULL;
		_exit(f && f(buf, buf, 4, ncclFloat32, ncclSum, NULL, NULL) ==
				  ncclInvalidUsage
			  ? 0
			  : 1);
	}
	close(fds[1]);
	got = read(fds[0], msg, sizeof(msg) - 1);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(got > 0);
	assert_non_null(strstr(msg, "/nonexistent/isle-plan.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exports),
	    cmocka_unit_test(test_passthrough),
	    cmocka_unit_test(test_codec_args),
	    cmocka_unit_test(test_no_gpu),
	    cmocka_unit_test(test_bad_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
