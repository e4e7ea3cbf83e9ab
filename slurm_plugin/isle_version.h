/*
 * isle_version.h - is the Slurm that loaded this plugin the one it was
 * built for (isle_version.c)? Free of Slurm's headers: the SPANK plugin
 * links it too.
 */
#ifndef ISLE_VERSION_H
#define ISLE_VERSION_H

/*
 * Compares the Slurm this plugin was built against with the one that loaded
 * it. 0 if they match; else logs one error naming both versions and returns
 * -EPROTO. what: the plugin, for the message.
 */
int isle__version_check(const char *what);

#endif /* ISLE_VERSION_H */
