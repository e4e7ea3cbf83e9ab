/*
 * train_mnist.c - data-parallel MLP on Fashion-MNIST, gradients summed with
 * plain MPI_Allreduce (the shim, when preloaded, carries them unmodified).
 *
 *   train_mnist [--data DIR] [--epochs E] [--seed S] [--train-n N]
 *               [--test-n N] [--batch B] [--lr LR] [--momentum M]
 *               [--label NAME]
 *
 * 784-256-10, ReLU, softmax cross-entropy, minibatch SGD with momentum;
 * B samples per rank and step (global batch B * ranks). Every rank reads
 * the gzip'd idx files (zlib), takes the first N training images, and
 * shuffles them the same way each epoch (seeded); rank r trains on every
 * size-th sample of that order. Rank 0 prints one JSON line:
 *   {"codec": NAME, "seed": S, "ranks": P, "epochs": E, "steps": T,
 *    "batch": B, "lr": LR, "momentum": M,
 *    "train_loss": L, "test_acc": A, "params_agree": 0|1}
 * train_loss is the mean loss over the last epoch's minibatches; test_acc
 * is over the first --test-n test images; params_agree says whether the
 * weights are bit-identical on every rank at the end (they must be: every
 * rank applies the same summed gradient). Exit 0 unless something failed.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <zlib.h>

#define IN 784
#define HID 256
#define OUT 10
#define NPARAM (HID * IN + HID + OUT * HID + OUT)

struct set {
	int n;
	float *x;	  /* n * IN, scaled to [0, 1] */
	unsigned char *y; /* n */
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Read exactly len bytes of a gzip'd file; 0 or -EIO. */
static int gz_read_all(gzFile f, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		int r = gzread(f, (char *)buf + got,
			       (unsigned)(len - got > (1u << 30) ? (1u << 30)
								 : len - got));
		if (r <= 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

/* idx3 images + idx1 labels, first max_n of them. */
static int load_set(const char *dir, const char *prefix, int max_n,
		    struct set *s)
{
	char path[4096];
	unsigned char hdr[16], *raw = NULL;
	gzFile fi = NULL, fl = NULL;
	int rc = -EIO, n;

	snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
	fi = gzopen(path, "rb");
	if (!fi || gz_read_all(fi, hdr, 16) || be32(hdr) != 0x803 ||
	    be32(hdr + 8) != 28 || be32(hdr + 12) != 28) {
		fprintf(stderr, "train_mnist: %s: not an idx3 28x28 file\n",
			path);
		goto out;
	}
	n = (int)be32(hdr + 4);
	if (max_n > 0 && max_n < n)
		n = max_n;
	s->n = n;
	s->x = malloc((size_t)n * IN * sizeof(float));
	s->y = malloc((size_t)n);
	raw = malloc((size_t)n * IN);
	if (!s->x || !s->y || !raw) {
		rc = -ENOMEM;
		goto out;
	}
	if (gz_read_all(fi, raw, (size_t)n * IN)) {
		fprintf(stderr, "train_mnist: %s: short file\n", path);
		goto out;
	}
	for (size_t i = 0; i < (size_t)n * IN; i++)
		s->x[i] = (float)raw[i] * (1.0f / 255.0f);
	snprintf(path, sizeof(path), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
	fl = gzopen(path, "rb");
	if (!fl || gz_read_all(fl, hdr, 8) || be32(hdr) != 0x801 ||
	    (int)be32(hdr + 4) < n || gz_read_all(fl, s->y, (size_t)n)) {
		fprintf(stderr, "train_mnist: %s: not an idx1 file\n", path);
		goto out;
	}
	for (int i = 0; i < n; i++)
		if (s->y[i] >= OUT)
			goto out;
	rc = 0;
out:
	if (fi)
		gzclose(fi);
	if (fl)
		gzclose(fl);
	free(raw);
	return rc;
}

/* xorshift64*: the same stream on every rank for a seed. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static float rng_normal(uint64_t *s)
{
	double u1 = ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
	double u2 = (double)(rng_next(s) >> 11) / 9007199254740992.0;

	return (float)(sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
}

/* Parameters and gradients share one flat layout. */
struct net {
	float *w1, *b1, *w2, *b2;
};

static struct net view(float *p)
{
	return (struct net){.w1 = p,
			    .b1 = p + HID * IN,
			    .w2 = p + HID * IN + HID,
			    .b2 = p + HID * IN + HID + OUT * HID};
}

/* Forward one sample; h (HID) and prob (OUT) out; returns the loss. */
static float forward(const struct net *m, const float *x, int y, float *h,
		     float *prob)
{
	float z[OUT], mx = -INFINITY, sum = 0;

	for (int j = 0; j < HID; j++) {
		const float *w = m->w1 + (size_t)j * IN;
		float a = m->b1[j];

		for (int i = 0; i < IN; i++)
			a += w[i] * x[i];
		h[j] = a > 0 ? a : 0;
	}
	for (int k = 0; k < OUT; k++) {
		const float *w = m->w2 + (size_t)k * HID;
		float a = m->b2[k];

		for (int j = 0; j < HID; j++)
			a += w[j] * h[j];
		z[k] = a;
		mx = a > mx ? a : mx;
	}
	for (int k = 0; k < OUT; k++) {
		prob[k] = expf(z[k] - mx);
		sum += prob[k];
	}
	for (int k = 0; k < OUT; k++)
		prob[k] /= sum;
	return -logf(prob[y] > 1e-30f ? prob[y] : 1e-30f);
}

/* Accumulate one sample's gradient into g; returns its loss. */
static float backward(const struct net *m, const struct net *g, const float *x,
		      int y)
{
	float h[HID], prob[OUT], dh[HID];
	float loss = forward(m, x, y, h, prob);

	prob[y] -= 1; /* dL/dz */
	memset(dh, 0, sizeof(dh));
	for (int k = 0; k < OUT; k++) {
		float d = prob[k];
		float *gw = g->w2 + (size_t)k * HID;
		const float *w = m->w2 + (size_t)k * HID;

		g->b2[k] += d;
		for (int j = 0; j < HID; j++) {
			gw[j] += d * h[j];
			dh[j] += d * w[j];
		}
	}
	for (int j = 0; j < HID; j++) {
		float d = h[j] > 0 ? dh[j] : 0;
		float *gw = g->w1 + (size_t)j * IN;

		if (d == 0)
			continue;
		g->b1[j] += d;
		for (int i = 0; i < IN; i++)
			gw[i] += d * x[i];
	}
	return loss;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: train_mnist [--data DIR] [--epochs E] [--seed S] "
		"[--train-n N] [--test-n N] [--batch B] [--lr LR] "
		"[--momentum M] [--label NAME]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = "/usr/share/datasets/fashion-mnist", *label = NULL;
	int epochs = 1, train_n = 0, test_n = 0, batch = 8, rank, size, rc = 1,
	    steps = 0;
	double lr = 0.05, mom = 0.9, loss_sum = 0, loss_cnt = 0;
	unsigned long seed = 1;
	struct set tr = {0}, te = {0};
	float *p = NULL, *g = NULL, *v = NULL;
	int *order = NULL;
	uint64_t rs;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *val = i + 1 < argc ? argv[++i] : NULL;

		if (!val)
			usage();
		if (!strcmp(k, "--data"))
			dir = val;
		else if (!strcmp(k, "--epochs"))
			epochs = atoi(val);
		else if (!strcmp(k, "--seed"))
			seed = strtoul(val, NULL, 10);
		else if (!strcmp(k, "--train-n"))
			train_n = atoi(val);
		else if (!strcmp(k, "--test-n"))
			test_n = atoi(val);
		else if (!strcmp(k, "--batch"))
			batch = atoi(val);
		else if (!strcmp(k, "--lr"))
			lr = atof(val);
		else if (!strcmp(k, "--momentum"))
			mom = atof(val);
		else if (!strcmp(k, "--label"))
			label = val;
		else
			usage();
	}
	if (epochs < 1 || batch < 1)
		usage();
	if (!label)
		label = getenv("ISLE_COMM_CODEC") ? getenv("ISLE_COMM_CODEC")
						  : "fp32";
	if (load_set(dir, "train", train_n, &tr) ||
	    load_set(dir, "t10k", test_n, &te))
		goto out;
	p = calloc(NPARAM, sizeof(float));
	g = calloc(NPARAM, sizeof(float));
	v = calloc(NPARAM, sizeof(float));
	order = malloc((size_t)tr.n * sizeof(int));
	if (!p || !g || !v || !order) {
		fprintf(stderr, "train_mnist: out of memory\n");
		goto out;
	}

	/* He initialisation, the same on every rank (same seed). */
	rs = 0x9E3779B97F4A7C15ULL ^ (seed * 0xD1B54A32D192ED03ULL);
	{
		struct net m = view(p);

		for (int i = 0; i < HID * IN; i++)
			m.w1[i] = rng_normal(&rs) * sqrtf(2.0f / IN);
		for (int i = 0; i < OUT * HID; i++)
			m.w2[i] = rng_normal(&rs) * sqrtf(2.0f / HID);
	}

	for (int e = 0; e < epochs; e++) {
		int per_step = batch * size;

		for (int i = 0; i < tr.n; i++)
			order[i] = i;
		for (int i = tr.n - 1; i > 0; i--) {
			int j = (int)(rng_next(&rs) % (uint64_t)(i + 1)), t;

			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		loss_sum = loss_cnt = 0;
		for (int s0 = 0; s0 + per_step <= tr.n; s0 += per_step) {
			struct net m = view(p), gv = view(g);
			float l = 0;
			double ls[2];

			memset(g, 0, NPARAM * sizeof(float));
			for (int b = 0; b < batch; b++) {
				int idx = order[s0 + b * size + rank];

				l += backward(&m, &gv, tr.x + (size_t)idx * IN,
					      tr.y[idx]);
			}
			/* The gradient: the one call the shim takes. */
			if (MPI_Allreduce(MPI_IN_PLACE, g, NPARAM, MPI_FLOAT,
					  MPI_SUM,
					  MPI_COMM_WORLD) != MPI_SUCCESS)
				goto out;
			for (int i = 0; i < NPARAM; i++) {
				v[i] =
				    (float)mom * v[i] + g[i] / (float)per_step;
				p[i] -= (float)lr * v[i];
			}
			ls[0] = l;
			ls[1] = batch;
			MPI_Allreduce(MPI_IN_PLACE, ls, 2, MPI_DOUBLE, MPI_SUM,
				      MPI_COMM_WORLD);
			loss_sum += ls[0];
			loss_cnt += ls[1];
			steps++;
		}
	}

	{
		struct net m = view(p);
		float h[HID], prob[OUT];
		long ok[2] = {0, 0};
		uint64_t hash = 1469598103934665603ULL, lo, hi;
		int agree;

		for (int i = rank; i < te.n; i += size) {
			int best = 0;

			forward(&m, te.x + (size_t)i * IN, te.y[i], h, prob);
			for (int k = 1; k < OUT; k++)
				if (prob[k] > prob[best])
					best = k;
			ok[0] += best == te.y[i];
			ok[1]++;
		}
		MPI_Allreduce(MPI_IN_PLACE, ok, 2, MPI_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
		/* FNV-1a of the weights' bits: equal on every rank? */
		for (size_t i = 0; i < NPARAM * sizeof(float); i++)
			hash =
			    (hash ^ ((unsigned char *)p)[i]) * 1099511628211ULL;
		MPI_Allreduce(&hash, &lo, 1, MPI_UINT64_T, MPI_MIN,
			      MPI_COMM_WORLD);
		MPI_Allreduce(&hash, &hi, 1, MPI_UINT64_T, MPI_MAX,
			      MPI_COMM_WORLD);
		agree = lo == hi;
		if (rank == 0) {
			printf(
			    "{\"codec\": \"%s\", \"seed\": %lu, "
			    "\"ranks\": %d, \"epochs\": %d, \"steps\": %d, "
			    "\"train_n\": %d, \"test_n\": %d, "
			    "\"batch\": %d, \"lr\": %g, \"momentum\": %g, "
			    "\"train_loss\": %.6f, \"test_acc\": %.4f, "
			    "\"params_agree\": %d}\n",
			    label, seed, size, epochs, steps, tr.n, te.n, batch,
			    lr, mom, loss_cnt > 0 ? loss_sum / loss_cnt : NAN,
			    ok[1] ? (double)ok[0] / (double)ok[1] : 0.0, agree);
			fflush(stdout);
		}
		rc = agree && steps > 0 ? 0 : 1;
	}
out:
	free(tr.x);
	free(tr.y);
	free(te.x);
	free(te.y);
	free(p);
	free(g);
	free(v);
	free(order);
	MPI_Finalize();
	return rc;
}
