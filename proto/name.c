/*
 * name.c - the one check for identifiers that reach an environment line, an
 * XML attribute, a path, a host list or a log: node, switch, rack and NIC
 * names, GPU bus ids. The set is what Slurm host names, Linux interface and
 * InfiniBand device names and PCI addresses need, and nothing that means
 * something to a shell, an env file, XML, a host list or a path.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto_priv.h"

static int name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
	       c == ':';
}

int isle_name_check(const char *name)
{
	size_t n = name ? strnlen(name, ISLE_NAME_MAX + 1) : 0;

	if (n == 0 || n > ISLE_NAME_MAX)
		return -1;
	/* Not an option, a hidden file, "." or "..". */
	if (name[0] == '-' || name[0] == '.' || name[0] == ':')
		return (unsigned char)name[0];
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)name[i]))
			return (unsigned char)name[i];
	return 0;
}

int isle_name_error(const char *what, const char *name, char *err,
		    size_t errlen)
{
	char shown[72];
	size_t i, o = 0;
	int c = isle_name_check(name);

	if (!c)
		return 0;
	/* The name may hold anything: show it escaped and cut. */
	for (i = 0; name && name[i] && o + 8 < sizeof(shown) && i < 48; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			shown[o++] = (char)ch;
		else
			o += (size_t)snprintf(shown + o, sizeof(shown) - o,
					      "\\x%02x", ch);
	}
	shown[o] = '\0';
	if (name && name[i])
		strcat(shown, "...");
	if (!what)
		what = "";
	if (c < 0)
		return errf(-EINVAL, err, errlen,
			    "%s%s'%s': expected 1-%d characters", what,
			    *what ? " " : "", shown, ISLE_NAME_MAX);
	if (c >= 0x20 && c < 0x7f)
		return errf(-EINVAL, err, errlen,
			    "%s%s'%s': character '%c' not allowed (names are "
			    "letters, digits, '_', '-', '.', ':')",
			    what, *what ? " " : "", shown, c);
	return errf(-EINVAL, err, errlen,
		    "%s%s'%s': byte 0x%02x not allowed (names are letters, "
		    "digits, '_', '-', '.', ':')",
		    what, *what ? " " : "", shown, c);
}
