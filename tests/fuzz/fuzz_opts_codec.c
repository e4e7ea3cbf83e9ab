/*
 * fuzz_opts_codec.c - codec spec strings for fuzz_opts.c.
 */
#include <math.h>

#include "fuzz.h"
#include "isle_comm.h"

void fuzz_codec_spec(const char *s);

void fuzz_codec_spec(const char *s)
{
	struct isle_codec c, d;
	char buf[64], err[256];

	if (isle_codec_parse(s, &c, err, sizeof(err)) != 0)
		return;
	/* The canonical form must read back as the same codec. */
	if (isle_codec_format(&c, buf, sizeof(buf)) <= 0 ||
	    isle_codec_parse(buf, &d, err, sizeof(err)) != 0 ||
	    c.kind != d.kind || c.block != d.block ||
	    c.error_feedback != d.error_feedback ||
	    (c.kind == ISLE_CODEC_TOPK && fabs(c.ratio - d.ratio) > 1e-9)) {
		fprintf(stderr, "codec \"%s\" -> \"%s\" does not round-trip\n",
			s, buf);
		abort();
	}
	isle_codec_encoded_size(&c, 1000);
	isle_codec_error_bound(&c);
}
