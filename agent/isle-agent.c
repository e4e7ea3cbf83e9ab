/*
 * isle-agent.c - main of isle-agent: dispatches `isle-agent NAME ...` to
 * the subcommand table below. A new subcommand is defined next to its code
 * as a `const struct isle_agent_cmd` (see isle_agent.h) and listed here.
 */
#include <stdio.h>
#include <string.h>

#include "isle_agent.h"

static const struct isle_agent_cmd *const commands[] = {
    &isle_agent_cmd_discover,
    &isle_agent_cmd_fabric,
    &isle_agent_cmd_plan,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *o)
{
	size_t i;

	fprintf(o, "usage: isle-agent COMMAND [ARGS...]\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(o, "  %-10s %s\n", commands[i]->name,
			commands[i]->summary);
	fprintf(o, "\n`isle-agent COMMAND --help` describes one command.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i]->name) == 0)
			return commands[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "isle-agent: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
