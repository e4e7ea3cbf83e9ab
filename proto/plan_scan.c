/*
 * plan_scan.c - the libc-only look at a plan and a codec spec for
 * libisle_preload.so, which links nothing but libc and so cannot use the
 * json-c reader: it only wants to know whether compression was asked for
 * (to decide how loud a pass-through is). The backends read the plan for
 * real with isle_plan_read.
 */
#include <string.h>
#include <strings.h>

#include "isle_proto.h"

/* The spec's codec name: up to ':', ',' or the closing quote. */
static int spec_is_none(const char *spec)
{
	size_t n = strcspn(spec, ":,\"");

	return n == 4 && !strncasecmp(spec, "none", 4);
}

int isle_codec_spec_compresses(const char *spec)
{
	return spec && *spec && !spec_is_none(spec);
}

int isle_plan_text_compresses(const char *text)
{
	const char *p = text;

	while (p && (p = strstr(p, "\"codec\""))) {
		p += strlen("\"codec\"");
		p += strspn(p, " \t\r\n:");
		if (*p == '"' && !spec_is_none(p + 1))
			return 1;
	}
	return 0;
}
