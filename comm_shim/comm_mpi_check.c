/*
 * comm_mpi_check - MPI test driver for the comm shim. It calls plain
 * MPI_Allreduce / MPI_Iallreduce; run it with libisle_preload.so in LD_PRELOAD
 * (mpirun -x LD_PRELOAD=..., or srun --export). The reference it compares
 * against is the MPI library's own PMPI_Allreduce, which the shim does not
 * touch.
 *
 *   comm_mpi_check exact [--sizes 1,7,1000] [--dtype float|double|both]
 *                        [--values int|real] [--tol REL] [--async N]
 *                        [--subcomm] [--iters N]
 *                        [--tol-mode elem|max]
 *       Integer-valued data must match bit for bit (--tol 0); real data
 *       within tol * sum_r |x_r[i]| per element (tol 0: 2 * p * eps), or
 *       with --tol-mode max within tol * max_i sum_r |x_r[i]| (int8).
 *       Every rank must hold identical bits. --async N also posts N
 *       MPI_Iallreduce at once and waits for all (exercises fusion).
 *   comm_mpi_check train [--steps N] [--lr X] [--dim D] [--classes C]
 *                        [--samples N] [--seed S]
 *       Data-parallel softmax regression on a seeded synthetic data set;
 *       prints "final_loss X" (loss evaluated with PMPI, uncompressed).
 *   comm_mpi_check fail --rank R --how exit|hang
 *       Rank R exits (or hangs) before an allreduce the others enter; the
 *       job must end with an error, not hang.
 *   comm_mpi_check mismatch [--n N] [--delta D]
 *       The last rank passes N + D floats, the others N. The job must end
 *       with an error naming the size mismatch (MPI_ERR_TRUNCATE), at once,
 *       not after a timeout; it never prints a sum.
 *   comm_mpi_check spawn [--n N] [--children C]
 *       MPI_Comm_spawn C copies of itself (default: as many as the parent
 *       job's ranks), MPI_Intercomm_merge, then MPI_Allreduce on the merged
 *       communicator (processes outside MPI_COMM_WORLD) against
 *       PMPI_Allreduce, bit for bit; each process prints "spawn: ... ok".
 *
 * Exit status 0 when all checks pass on every rank.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

static int rank, nprocs;
static int tol_of_max; /* --tol-mode max: tol * max_i sum_r |x_r[i]| */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
	return (double)(rng_next(s) >> 11) * 0x1p-53;
}

static double rng_gauss(uint64_t *s)
{
	double u = rng_unit(s) + 1e-300, v = rng_unit(s);

	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static const char *opt(int argc, char **argv, const char *name, const char *def)
{
	for (int i = 2; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return def;
}

static int flag(int argc, char **argv, const char *name)
{
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], name))
			return 1;
	return 0;
}

/* ------------------------------------------------------------- exact */

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Fills x (this rank's input) for element type es (4 or 8). */
static void fill(void *x, size_t n, size_t es, int integer, uint64_t seed)
{
	uint64_t s = seed * 1000003u + (uint64_t)rank;

	for (size_t i = 0; i < n; i++) {
		double v = integer
			       ? (double)((int64_t)(rng_next(&s) % 2001) - 1000)
			       : rng_gauss(&s) * (1 + (double)(i % 7));

		if (es == 4)
			((float *)x)[i] = (float)v;
		else
			((double *)x)[i] = v;
	}
}

static double getv(const void *x, size_t i, size_t es)
{
	return es == 4 ? ((const float *)x)[i] : ((const double *)x)[i];
}

/* One check: returns the number of bad elements (summed over ranks). */
static long check_one(MPI_Comm comm, size_t n, MPI_Datatype dt, int integer,
		      double tol, int async, int inplace, uint64_t seed)
{
	size_t es = dt == MPI_FLOAT ? 4 : 8;
	int p;
	char *x = malloc(n * es), *got = malloc(n * es), *ref = malloc(n * es);
	int exact = tol == 0 && integer;
	double *absx = exact ? NULL : malloc(n * sizeof(double));
	double *abssum = exact ? NULL : malloc(n * sizeof(double));
	long bad = 0, allbad = 0;
	uint64_t h, hmin, hmax;
	double worst = 0, maxabs = 0;

	if (!x || !got || !ref || (!exact && (!absx || !abssum))) {
		fprintf(stderr, "comm_mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Comm_size(comm, &p);
	fill(x, n, es, integer, seed);
	PMPI_Allreduce(x, ref, (int)n, dt, MPI_SUM, comm);
	if (!exact) { /* the scale of each element's rounding error */
		for (size_t i = 0; i < n; i++)
			absx[i] = fabs(getv(x, i, es));
		PMPI_Allreduce(absx, abssum, (int)n, MPI_DOUBLE, MPI_SUM, comm);
	}

	if (inplace) {
		memcpy(got, x, n * es);
		if (async) {
			MPI_Request r;

			MPI_Iallreduce(MPI_IN_PLACE, got, (int)n, dt, MPI_SUM,
				       comm, &r);
			MPI_Wait(&r, MPI_STATUS_IGNORE);
		} else {
			MPI_Allreduce(MPI_IN_PLACE, got, (int)n, dt, MPI_SUM,
				      comm);
		}
	} else if (async) {
		MPI_Request r;

		MPI_Iallreduce(x, got, (int)n, dt, MPI_SUM, comm, &r);
		MPI_Wait(&r, MPI_STATUS_IGNORE);
	} else {
		MPI_Allreduce(x, got, (int)n, dt, MPI_SUM, comm);
	}

	if (exact) /* integer-valued sums: every order gives the same bits */
		bad += memcmp(got, ref, n * es) != 0;
	for (size_t i = 0; !exact && i < n; i++)
		maxabs = abssum[i] > maxabs ? abssum[i] : maxabs;
	for (size_t i = 0; !exact && i < n; i++) {
		double a = getv(got, i, es), b = getv(ref, i, es), lim;
		double scale = tol_of_max ? maxabs : abssum[i];
		lim = (tol > 0
			   ? tol
			   : 2.0 * p * (es == 4 ? FLT_EPSILON : DBL_EPSILON)) *
		      scale;
		if (!(fabs(a - b) <= lim))
			bad++;
		if (scale > 0 && fabs(a - b) / scale > worst)
			worst = fabs(a - b) / scale;
	}
	/* Every rank must hold the same bits. */
	h = hash_bytes(got, n * es);
	PMPI_Allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, comm);
	PMPI_Allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, comm);
	if (hmin != hmax)
		bad++;
	PMPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, comm);
	PMPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
	if (rank == 0 || (allbad && bad))
		printf(
		    "exact: ranks %d n %zu %s %s%s%s: %s (worst rel %.3g%s)\n",
		    p, n, es == 4 ? "float" : "double",
		    integer ? "int" : "real", async ? " async" : "",
		    inplace ? " in-place" : "", allbad ? "FAIL" : "ok", worst,
		    hmin != hmax ? ", ranks differ" : "");
	free(x);
	free(got);
	free(ref);
	free(absx);
	free(abssum);
	return allbad;
}

/* N MPI_Iallreduce in flight at once, of mixed sizes: fusion. */
static long check_many(MPI_Comm comm, int nreq, int integer, double tol)
{
	MPI_Request *reqs = calloc((size_t)nreq, sizeof(*reqs));
	float **x = calloc((size_t)nreq, sizeof(*x));
	float **ref = calloc((size_t)nreq, sizeof(*ref));
	size_t *n = calloc((size_t)nreq, sizeof(*n));
	long bad = 0, allbad;
	double mx = 0;

	for (int k = 0; k < nreq; k++) {
		n[k] = 1 + (size_t)((k * 7919) % 3000);
		x[k] = malloc(n[k] * 4);
		ref[k] = malloc(n[k] * 4);
		fill(x[k], n[k], 4, integer, 77 + (uint64_t)k);
		PMPI_Allreduce(x[k], ref[k], (int)n[k], MPI_FLOAT, MPI_SUM,
			       comm);
	}
	for (int k = 0; k < nreq; k++)
		MPI_Iallreduce(MPI_IN_PLACE, x[k], (int)n[k], MPI_FLOAT,
			       MPI_SUM, comm, &reqs[k]);
	MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE);
	/*
	 * Same bounds as check_one, from the inputs' magnitudes. Fused
	 * requests share codec blocks, so "max" is over all of them.
	 */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < nreq; k++) {
			float *a = malloc(n[k] * 4), *as = malloc(n[k] * 4);
			double lim;

			fill(a, n[k], 4, integer, 77 + (uint64_t)k);
			for (size_t i = 0; i < n[k]; i++)
				a[i] = fabsf(a[i]);
			PMPI_Allreduce(a, as, (int)n[k], MPI_FLOAT, MPI_SUM,
				       comm);
			for (size_t i = 0; i < n[k]; i++)
				mx = as[i] > mx ? as[i] : mx;
			for (size_t i = 0; pass == 1 && i < n[k]; i++) {
				double d = fabs((double)x[k][i] - ref[k][i]);

				lim = (tol > 0 ? tol
					       : 2.0 * nprocs * FLT_EPSILON) *
				      (tol_of_max ? mx : as[i]) * 1.0001;
				if (integer && tol == 0 ? d != 0 : !(d <= lim))
					bad++;
			}
			free(a);
			free(as);
		}
	for (int k = 0; k < nreq; k++) {
		free(x[k]);
		free(ref[k]);
	}
	PMPI_Allreduce(&bad, &allbad, 1, MPI_LONG, MPI_SUM, comm);
	if (rank == 0)
		printf("exact: %d concurrent MPI_Iallreduce: %s\n", nreq,
		       allbad ? "FAIL" : "ok");
	free(reqs);
	free(x);
	free(ref);
	free(n);
	return allbad;
}

/* A user-defined op on a derived type: the shim must not touch it. */
static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	for (int i = 0; i < 2 * *len; i++)
		((float *)inout)[i] += ((const float *)in)[i];
}

static int run_exact(int argc, char **argv)
{
	const char *sizes =
	    opt(argc, argv, "--sizes", "1,2,3,7,64,1000,4099,65537");
	const char *dts = opt(argc, argv, "--dtype", "both");
	int integer = strcmp(opt(argc, argv, "--values", "int"), "real") != 0;
	double tol = atof(opt(argc, argv, "--tol", "0"));
	int async = atoi(opt(argc, argv, "--async", "0"));
	int iters = atoi(opt(argc, argv, "--iters", "1"));
	long bad = 0;
	char *list = strdup(sizes), *save = NULL;

	tol_of_max = !strcmp(opt(argc, argv, "--tol-mode", "elem"), "max");
	for (char *t = strtok_r(list, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		size_t n = strtoull(t, NULL, 0);

		for (int it = 0; it < iters; it++) {
			uint64_t seed = n * 31 + (uint64_t)it;

			if (strcmp(dts, "double"))
				bad += check_one(MPI_COMM_WORLD, n, MPI_FLOAT,
						 integer, tol, 0, it & 1, seed);
			if (strcmp(dts, "float"))
				bad +=
				    check_one(MPI_COMM_WORLD, n, MPI_DOUBLE,
					      integer, tol, 0, !(it & 1), seed);
			if (async)
				bad += check_one(MPI_COMM_WORLD, n, MPI_FLOAT,
						 integer, tol, 1, 0, seed);
		}
	}
	free(list);
	if (async)
		bad += check_many(MPI_COMM_WORLD, async, integer, tol);
	if (flag(argc, argv, "--subcomm") && nprocs > 1) {
		MPI_Comm sub;

		/* Odd/even halves: the shim must work on any communicator. */
		MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
		bad += check_one(sub, 1001, MPI_FLOAT, integer, tol, 0, 0, 5);
		MPI_Comm_free(&sub);
	}
	/* Calls the shim leaves alone must still work (pass-through). */
	{
		int one = 1, sum = 0;
		long pt = 0;
		float v[6] = {1, 2, 3, 4, 5, (float)rank}, w[6], ref[6];
		MPI_Datatype pair;
		MPI_Op op;

		MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if (sum != nprocs)
			pt++;
		/* Other op, derived type: must reach the library as they are.
		 */
		MPI_Allreduce(v, w, 6, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
		if (w[5] != (float)(nprocs - 1))
			pt++;
		MPI_Type_contiguous(2, MPI_FLOAT, &pair);
		MPI_Type_commit(&pair);
		MPI_Op_create(pair_sum, 1, &op);
		MPI_Allreduce(v, w, 3, pair, op, MPI_COMM_WORLD);
		MPI_Op_free(&op);
		PMPI_Allreduce(v, ref, 6, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		if (memcmp(w, ref, sizeof(w)))
			pt++;
		MPI_Type_free(&pair);
		if (rank == 0)
			printf("exact: pass-through (int, MAX, user op on a "
			       "derived type): "
			       "%s\n",
			       pt ? "FAIL" : "ok");
		bad += pt;
	}
	if (rank == 0)
		printf("exact: %s\n", bad ? "FAIL" : "PASS");
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------- train */

/* Mean cross-entropy of W (C x (D+1)) over X (n x D), y; grad if g. */
static double loss_grad(const float *W, const float *X, const int *y, int n,
			int D, int C, float *g)
{
	double loss = 0;
	double *z = malloc(sizeof(double) * (size_t)C);

	if (g)
		memset(g, 0, sizeof(float) * (size_t)C * (D + 1));
	for (int i = 0; i < n; i++) {
		const float *x = X + (size_t)i * D;
		double m = -INFINITY, s = 0;

		for (int c = 0; c < C; c++) {
			const float *w = W + (size_t)c * (D + 1);
			double a = w[D];

			for (int d = 0; d < D; d++)
				a += (double)w[d] * x[d];
			z[c] = a;
			m = a > m ? a : m;
		}
		for (int c = 0; c < C; c++)
			s += exp(z[c] - m);
		loss += log(s) + m - z[y[i]];
		if (!g)
			continue;
		for (int c = 0; c < C; c++) {
			float *gw = g + (size_t)c * (D + 1);
			float e = (float)(exp(z[c] - m) / s - (c == y[i]));

			for (int d = 0; d < D; d++)
				gw[d] += e * x[d];
			gw[D] += e;
		}
	}
	free(z);
	return loss;
}

static int run_train(int argc, char **argv)
{
	int steps = atoi(opt(argc, argv, "--steps", "300"));
	double lr = atof(opt(argc, argv, "--lr", "0.5"));
	int D = atoi(opt(argc, argv, "--dim", "128"));
	int C = atoi(opt(argc, argv, "--classes", "16"));
	int n = atoi(opt(argc, argv, "--samples", "400"));
	uint64_t seed = strtoull(opt(argc, argv, "--seed", "1"), NULL, 0);
	size_t np = (size_t)C * (D + 1);
	float *W = calloc(np, sizeof(float)), *g = malloc(np * sizeof(float));
	float *T = malloc(np * sizeof(float));
	float *X = malloc(sizeof(float) * (size_t)n * D);
	int *y = malloc(sizeof(int) * (size_t)n);
	uint64_t s = seed;
	double loss = 0, total = 0;
	long ntot = (long)n * nprocs;

	/* The teacher is the same everywhere; the samples differ per rank. */
	for (size_t i = 0; i < np; i++)
		T[i] = (float)rng_gauss(&s);
	s = seed * 7919 + (uint64_t)rank + 1;
	for (int i = 0; i < n; i++) {
		int best = 0;
		double bz = -INFINITY;

		for (int d = 0; d < D; d++)
			X[(size_t)i * D + d] = (float)(rng_gauss(&s) / sqrt(D));
		for (int c = 0; c < C; c++) {
			double a = T[(size_t)c * (D + 1) + D] + rng_gauss(&s);

			for (int d = 0; d < D; d++)
				a += (double)T[(size_t)c * (D + 1) + d] *
				     X[(size_t)i * D + d];
			if (a > bz) {
				bz = a;
				best = c;
			}
		}
		y[i] = best;
	}
	for (int t = 0; t < steps; t++) {
		loss_grad(W, X, y, n, D, C, g);
		/* The gradient allreduce the shim compresses. */
		MPI_Allreduce(MPI_IN_PLACE, g, (int)np, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		for (size_t i = 0; i < np; i++)
			W[i] -= (float)(lr * g[i] / (double)ntot);
		if (rank == 0 && (t % 100 == 0 || t == steps - 1) &&
		    flag(argc, argv, "--verbose")) {
			loss = loss_grad(W, X, y, n, D, C, NULL);
			printf("step %d local loss %.6f\n", t, loss / n);
		}
	}
	loss = loss_grad(W, X, y, n, D, C, NULL);
	PMPI_Allreduce(&loss, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("final_loss %.6f\n", total / (double)ntot);
	free(W);
	free(g);
	free(T);
	free(X);
	free(y);
	return 0;
}

/* -------------------------------------------------------------- fail */

static int run_fail(int argc, char **argv)
{
	int victim = atoi(opt(argc, argv, "--rank", "1"));
	const char *how = opt(argc, argv, "--how", "exit");
	float buf[1024];

	for (int i = 0; i < 1024; i++)
		buf[i] = 1;
	/* One good allreduce first, so the failure hits a set-up shim. */
	MPI_Allreduce(MPI_IN_PLACE, buf, 1024, MPI_FLOAT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == victim) {
		fprintf(stderr, "comm_mpi_check: rank %d %s now\n", rank,
			!strcmp(how, "hang") ? "hangs" : "exits");
		if (!strcmp(how, "hang"))
			for (;;)
				pause();
		_exit(3);
	}
	MPI_Allreduce(MPI_IN_PLACE, buf, 1024, MPI_FLOAT, MPI_SUM,
		      MPI_COMM_WORLD);
	printf("comm_mpi_check: rank %d: allreduce returned after a peer "
	       "failed\n",
	       rank);
	return 1;
}

/* ---------------------------------------------------------- mismatch */

static int run_mismatch(int argc, char **argv)
{
	int n = atoi(opt(argc, argv, "--n", "100000"));
	int delta = atoi(opt(argc, argv, "--delta", "1"));
	int mine = rank == nprocs - 1 ? n + delta : n, rc;
	float *buf = malloc(sizeof(float) * (size_t)(n + abs(delta)));

	if (!buf || mine <= 0)
		return 2;
	for (int i = 0; i < n + abs(delta); i++)
		buf[i] = 1;
	rc = MPI_Allreduce(MPI_IN_PLACE, buf, mine, MPI_FLOAT, MPI_SUM,
			   MPI_COMM_WORLD);
	printf("mismatch: rank %d count %d: allreduce returned %d, buf[0] %g\n",
	       rank, mine, rc, (double)buf[0]);
	free(buf);
	return 1; /* the job should have ended with an error by now */
}

/* ------------------------------------------------------------ spawn */

static int run_spawn(int argc, char **argv)
{
	int n = atoi(opt(argc, argv, "--n", "100000"));
	int children = atoi(opt(argc, argv, "--children", "0"));
	MPI_Comm parent, inter, merged;
	int mr, ms, bad = 0;
	float *x, *got, *want;
	char self[4096];
	ssize_t len;

	MPI_Comm_get_parent(&parent);
	if (parent == MPI_COMM_NULL) {
		char nbuf[32], *args[] = {"spawn", "--n", nbuf, NULL};

		len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (len <= 0)
			return 2;
		self[len] = '\0';
		snprintf(nbuf, sizeof(nbuf), "%d", n);
		MPI_Comm_spawn(self, args, children > 0 ? children : nprocs,
			       MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
			       MPI_ERRCODES_IGNORE);
	} else {
		inter = parent;
	}
	MPI_Intercomm_merge(inter, parent != MPI_COMM_NULL, &merged);
	MPI_Comm_rank(merged, &mr);
	MPI_Comm_size(merged, &ms);
	x = malloc(sizeof(float) * (size_t)n);
	got = malloc(sizeof(float) * (size_t)n);
	want = malloc(sizeof(float) * (size_t)n);
	if (!x || !got || !want)
		return 2;
	for (int i = 0; i < n; i++)
		x[i] = (float)((mr + 1) * (i % 7 + 1));
	MPI_Allreduce(x, got, n, MPI_FLOAT, MPI_SUM, merged);
	PMPI_Allreduce(x, want, n, MPI_FLOAT, MPI_SUM, merged);
	for (int i = 0; i < n; i++)
		bad += memcmp(&got[i], &want[i], sizeof(float)) != 0;
	printf("spawn: %s rank %d of %d (merged): %s\n",
	       parent == MPI_COMM_NULL ? "parent" : "child", mr, ms,
	       bad ? "MISMATCH" : "ok");
	free(x);
	free(got);
	free(want);
	MPI_Comm_free(&merged);
	MPI_Comm_disconnect(&inter);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int rc;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (!strcmp(mode, "exact"))
		rc = run_exact(argc, argv);
	else if (!strcmp(mode, "train"))
		rc = run_train(argc, argv);
	else if (!strcmp(mode, "fail"))
		rc = run_fail(argc, argv);
	else if (!strcmp(mode, "mismatch"))
		rc = run_mismatch(argc, argv);
	else if (!strcmp(mode, "spawn"))
		rc = run_spawn(argc, argv);
	else {
		if (rank == 0)
			fprintf(stderr,
				"usage: comm_mpi_check exact|train|fail|"
				"mismatch|spawn "
				"[options] (see the source header)\n");
		rc = 2;
	}
	fflush(stdout);
	MPI_Finalize();
	return rc;
}
