/*
 * spank_gres.c - GPU indices of one node from the controller's GRES detail
 * (job_info_t.gres_detail_str[i], what `scontrol show job -d` prints as
 * GRES=...), e.g. "gpu:4(IDX:0-3)" or "gpu:a100:1(IDX:0),gpu:h100:2(IDX:2,5)".
 * Pure string work, no Slurm symbols: unit tested on its own.
 */
#include <errno.h>
#include <string.h>

#include "spank_isle.h"

/* Appends s[0..n) to out (with a comma when not empty). */
static int append(char *out, size_t len, const char *s, size_t n)
{
	size_t o = strlen(out);

	if (o + (o ? 1 : 0) + n + 1 > len)
		return -ENAMETOOLONG;
	if (o)
		out[o++] = ',';
	memcpy(out + o, s, n);
	out[o + n] = '\0';
	return 0;
}

int isle__gres_gpu_idx(const char *detail, char *out, size_t len)
{
	const char *s = detail;

	if (!out || !len)
		return -EINVAL;
	out[0] = '\0';
	if (!detail)
		return 0;
	while (*s) {
		const char *open = NULL, *close = NULL, *e = s;
		int depth = 0;

		/* One entry: up to a comma outside parentheses. */
		for (; *e && (*e != ',' || depth); e++) {
			if (*e == '(') {
				if (depth++ == 0)
					open = e;
			} else if (*e == ')') {
				if (--depth < 0)
					return -EINVAL;
				if (depth == 0)
					close = e;
			}
		}
		if (depth)
			return -EINVAL;
		if ((size_t)(e - s) >= 3 && !strncmp(s, "gpu", 3) &&
		    (s + 3 == e || s[3] == ':' || s[3] == '(') && open &&
		    close && close - open > 5 &&
		    !strncmp(open + 1, "IDX:", 4)) {
			const char *l = open + 5;
			size_t n = (size_t)(close - l);
			int rc;

			if (strspn(l, "0123456789,-") < n)
				return -EINVAL;
			if ((rc = append(out, len, l, n)))
				return rc;
		}
		s = *e ? e + 1 : e;
	}
	return 0;
}
