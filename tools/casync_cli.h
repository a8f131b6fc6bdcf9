/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * casync_cli.h - casync's command line, translated into cafs commands.
 *
 * One parser for casync's global options; each verb becomes the request
 * of the cafs command that does its work (make, extract, list, ...),
 * filled through that command's own set() and run in-process, so the two
 * front ends share every line of behaviour and only differ in syntax.
 */
#ifndef CAFS_CASYNC_CLI_H
#define CAFS_CASYNC_CLI_H

#include <stdbool.h>

/* How the front end was reached. */
enum cafs_casync_mode {
	/* invoked as `casync`: casync's syntax, defaults and exit codes
	 * (1 for usage errors), --cache is casync's encoder cache (ignored) */
	CAFS_CASYNC_NAMED,
	/* `cafs [CASYNC-OPTIONS] COMMAND [COMMAND'S OWN ARGUMENTS]`: options
	 * before the command are casync's, translated for it; what follows
	 * the command is parsed by the cafs command as usual (so `-l` after
	 * `list` is still --long); --cache keeps cafs's meaning */
	CAFS_CASYNC_PREFIX,
};

/* Runs the command line; returns the exit code. */
int cafs_casync_main(int argc, char **argv, enum cafs_casync_mode mode);

#endif
