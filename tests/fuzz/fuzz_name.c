/*
 * fuzz_name.c - proto's one name check (isle_name_check) against what the
 * names reach, and the cluster-file loader against the check.
 *
 * Input: the name. A name the check accepts must be safe on an env line
 * (no '\n', '=' or ','), in an XML attribute (no < > & " '), as a path
 * component (no '/', not "." or ".."), in a host list (no , [ ]) and on a
 * terminal (printable ASCII); isle_name_error must agree and fit any
 * buffer. The same name as a node and as a NIC name in a cluster file
 * loads exactly when the check accepts it.
 */
#include <errno.h>

#include "fuzz.h"
#include "isle_proto.h"
#include "isle_topo.h"

static void need(int ok, const char *what, const char *name)
{
	if (ok)
		return;
	fprintf(stderr, "name check: %s: '%s'\n", what, name);
	abort();
}

/* The name as a JSON string body: quotes, backslashes and control bytes
 * escaped, other bytes as they are. */
static void json_escape(char *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			out += sprintf(out, "\\%c", c);
		else if (c < 0x20)
			out += sprintf(out, "\\u%04x", c);
		else
			*out++ = (char)c;
	}
	*out = '\0';
}

static int loads_as(const char *fmt, const char *esc)
{
	char *json = malloc(strlen(fmt) + 2 * strlen(esc) + 1);
	isle_topo *t = NULL;
	char err[512];
	int rc;

	if (!json)
		abort();
	sprintf(json, fmt, esc, esc);
	rc = isle_topo_load_buf(json, "fuzz.json", &t, err, sizeof(err));
	isle_topo_destroy(t);
	free(json);
	return rc >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name, *esc, small[8], err[512];
	size_t n;
	int c;

	if (size > 4096)
		return 0;
	name = fuzz_str(data, size);
	n = strlen(name);
	c = isle_name_check(name);
	if (c == 0) {
		need(n >= 1 && n <= ISLE_NAME_MAX, "length", name);
		need(strcmp(name, ".") && strcmp(name, ".."), "dot", name);
		need(name[0] != '-', "option", name);
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)name[i];

			need(ch > 0x20 && ch < 0x7f, "printable", name);
			need(!strchr("\n=,<>&\"'/[]#;$`\\ ", ch), "special",
			     name);
		}
	} else {
		need(c == -1 || (c > 0 && c < 256), "return value", name);
		need(c != -1 || n == 0 || n > ISLE_NAME_MAX, "-1", name);
		need(c == -1 || memchr(name, c, n) != NULL, "byte", name);
	}
	need((isle_name_error("x", name, err, sizeof(err)) == 0) == (c == 0),
	     "isle_name_error agrees", name);
	(void)isle_name_error("x", name, small, sizeof(small));
	need(strlen(small) < sizeof(small), "small buffer", name);

	esc = malloc(6 * n + 1);
	if (!esc)
		abort();
	json_escape(esc, name);
	need(loads_as("{\"version\": 1, \"nodes\": [{\"name\": \"%s\", "
		      "\"nics\": [{\"name\": \"%s\"}]}]}",
		      esc) == (c == 0),
	     "node + NIC name loads iff the check accepts it", name);
	free(esc);
	free(name);
	return 0;
}
