/*
 * plan_util.c - GPU index lists and error messages for `isle-agent plan`.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "plan.h"

/* Parses an unsigned decimal of at most 9 digits at *p. */
static int parse_num(const char **p, long *v)
{
	const char *s = *p;
	int n = 0;

	*v = 0;
	while (*s >= '0' && *s <= '9' && n < 10) {
		*v = *v * 10 + (*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > 9)
		return -1;
	*p = s;
	return 0;
}

int isle__index_list_parse(const char *s, uint64_t *mask, char *err,
			   size_t errlen)
{
	const char *p = s;
	uint64_t m = 0;

	if (!s || !*s)
		goto bad;
	while (*p) {
		long lo, hi;

		if (parse_num(&p, &lo) < 0)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_num(&p, &hi) < 0 || hi < lo)
				goto bad;
		}
		if (hi >= ISLE_MAX_GPUS_PER_NODE) {
			return isle__errf(
			    -ERANGE, err, errlen,
			    "GPU list '%s': index %ld out of range "
			    "(max %d)",
			    s, hi, ISLE_MAX_GPUS_PER_NODE - 1);
		}
		for (long i = lo; i <= hi; i++) {
			if (m & (1ULL << i)) {
				return isle__errf(-EINVAL, err, errlen,
						  "GPU list '%s': index %ld "
						  "repeated",
						  s, i);
			}
			m |= 1ULL << i;
		}
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			goto bad;
	}
	*mask = m;
	return 0;
bad:
	return isle__errf(-EINVAL, err, errlen,
			  "GPU list '%s': expected N, N-M, ...", s ? s : "");
}
