/*
 * errf.c - the one error-message helper of every isle module (libc only,
 * so the preload library may link it too).
 */
#include <stdarg.h>
#include <stdio.h>

#include "isle_proto.h"

int isle__errf(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}
