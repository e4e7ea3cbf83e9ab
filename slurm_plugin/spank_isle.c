/*
 * spank_isle.c - the isle SPANK plugin: option table and context dispatch.
 *
 *   sbatch|salloc|srun --isle-tp=N --isle-pp=N --isle-mode=required|preferred
 *       --isle-span=island|node|leaf|spine
 *       --isle-compress=none|fp16|bf16|int8|topk:RATIO --isle-shim=auto|off
 *
 * plugstack.conf arguments set the site policy (see spank_isle.h and
 * slurm_plugin/plugstack.conf.example). Values are validated when given, so a
 * bad value fails the submission with a message naming the option.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "spank_isle.h"

ISLE_EXPORT const char plugin_name[] = "isle";
ISLE_EXPORT const char plugin_type[] = "spank";
ISLE_EXPORT const unsigned int plugin_version = SLURM_VERSION_NUMBER;
ISLE_EXPORT const unsigned int spank_plugin_version = 1;

static struct isle__spank_state state;

static int _opt_cb(int val, const char *optarg, int remote);

/* SPANK's option table, filled from proto's (isle_job_opt_desc) before
 * the options are registered. `val` is the option id. */
static struct spank_option isle_options[ISLE_OPT_COUNT];

static void _options_fill(void)
{
	for (int opt = ISLE_OPT_TP; opt < ISLE_OPT_COUNT; opt++) {
		const struct isle_job_opt_desc *d = isle_job_opt_desc(opt);

		isle_options[opt - 1] =
		    (struct spank_option){(char *)d->name,
					  (char *)d->arginfo,
					  (char *)d->usage,
					  1,
					  opt,
					  _opt_cb};
	}
	isle_options[ISLE_OPT_COUNT - 1] =
	    (struct spank_option)SPANK_OPTIONS_TABLE_END;
}

const struct isle__spank_state *isle__spank_state(void)
{
	return &state;
}

static int _opt_cb(int val, const char *optarg, int remote)
{
	char err[256];

	if (isle_job_opt_parse(&state.user, val, optarg, err, sizeof(err))) {
		slurm_error("isle: %s", err);
		return -1;
	}
	return 0;
}

/* Fresh state with the site policy from the plugstack.conf arguments. */
static int _state_init(int ac, char **av)
{
	char err[256];

	memset(&state, 0, sizeof(state));
	isle__spank_policy_init(&state.policy);
	if (isle__spank_policy_parse(&state.policy, ac, av, err, sizeof(err))) {
		slurm_error("isle: %s", err);
		return -1;
	}
	return 0;
}

ISLE_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (_state_init(ac, av))
		return -1;
	if (ctx == S_CTX_SLURMD || ctx == S_CTX_ERROR)
		return 0;
	_options_fill();
	for (struct spank_option *o = isle_options; o->name; o++) {
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error("isle: cannot register --%s", o->name);
			return -1;
		}
	}
	return 0;
}

ISLE_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return isle__spank_local_post_opt(sp, &state);
	case S_CTX_REMOTE:
		return isle__spank_remote_post_opt(sp, &state);
	default:
		return 0;
	}
}

ISLE_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return isle__spank_remote_task_init(sp, &state);
}

/*
 * Prolog and epilog run in a private stack without slurm_spank_init. A
 * failing prolog drains the node, so a bad policy only costs the job its
 * plan (the error is logged).
 */
ISLE_EXPORT int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (_state_init(ac, av))
		return 0;
	return isle__spank_job_prolog(sp, &state);
}

ISLE_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (_state_init(ac, av))
		return 0;
	return isle__spank_job_epilog(sp, &state);
}

ISLE_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	memset(&state.user, 0, sizeof(state.user));
	state.resolved = 0;
	return 0;
}
