/*
 * isle_slurm.h - public interface of slurm_plugin/ beyond the two Slurm
 * plugins themselves: the `islectl explain` subcommand.
 *
 * topology/isle saves one decision record per placed job as
 * StateSaveLocation/isle/job_<id>.json (see docs/slurm-plugin.md).
 */
#ifndef ISLE_SLURM_H
#define ISLE_SLURM_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Prints the decision record at path to out (text, or the raw JSON when
 * json is nonzero). Returns 0, -ENOENT or -EINVAL with err[errlen] filled.
 */
int isle_explain_print(const char *path, int json, FILE *out, char *err,
		       size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* ISLE_SLURM_H */
