/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * main.c - the cafs command: dispatch to subcommands.
 *
 * Calls go one way, down:
 *   main -> cafs_command_main (common.c: the command's option table into a
 *           request) -> the command's run(request) (cmd_*.c)
 *   main -> casync_cli (casync's command line into the same requests)
 *           -> the command's run(request)
 * Nothing calls back into main.c, and casync_cli.c builds no argv for a
 * cafs command: each command's options are one table (cmd_*.c, struct
 * cafs_option) read by the getopt parser, by `cafs help` and, through
 * the command's set(), by the casync front end.
 *
 * `cafs SOURCE MOUNTPOINT` (no subcommand) means `cafs mount SOURCE
 * MOUNTPOINT`; invoked as mount.cafs it takes mount(8)'s argument order;
 * invoked as casync, or with options before the command, casync's command
 * line (casync_cli.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "casync_cli.h"
#include "cmd.h"
#include "completion.h"
#include "base/log.h"
#include "image/store_ops.h"

static const struct cafs_command *const commands[] = {
	&cafs_command_make, &cafs_command_extract, &cafs_command_digest, &cafs_command_info,
	&cafs_command_mount, &cafs_command_stats, &cafs_command_cache, &cafs_command_gc,
	&cafs_command_sign, &cafs_command_delta, &cafs_command_list, &cafs_command_meta, &cafs_command_mtree,
};

static const char *program = "cafs";

static const struct cafs_command *command_find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: %s COMMAND [OPTIONS] ...\n"
	           "       %s [mount] [OPTIONS] SOURCE MOUNTPOINT\n\n"
	           "Content-addressed images in casync's formats: make, mount lazily over HTTP, extract.\n\n"
	           "Commands:\n",
	        program, program);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s\n", commands[i]->synopsis);
	fprintf(f, "  help COMMAND\n\n"
	           "Options: -h, --help; --version. 'cafs help COMMAND' shows a command's options.\n"
	           "casync's options may come before a command; invoked as casync, cafs takes\n"
	           "casync's command line (man cafs: CASYNC COMPATIBILITY).\n");
}

/* fds 0-2 must be open before we open anything, or a chunk could land on stdout */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);
			if (n >= 0 && n != fd)
				close(n);
		}
}

int main(int argc, char **argv)
{
	/* the command's messages go to stderr; every thread it starts
	 * inherits this logger, and -v/-q set its level */
	struct ca_logger logger = CA_LOGGER_STDERR(CA_LOG_WARNING);
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	ensure_std_fds();
	ca_log_use(&logger);
	/* a bad store settings file (cafs.conf) is one line before any
	 * work; help needs none */
	bool just_help = argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	                 !strcmp(argv[1], "completion") ||
	                 !strcmp(argv[1], "--help") || !strcmp(argv[1], "--version");
	if (!just_help && ca_store_ops_check_settings() < 0)
		return 1;

	if (!strcmp(base, "mount.cafs")) {
		const struct cafs_command *m = command_find("mount");
		if (!m) {
			fprintf(stderr, "cafs: mount: not built into this cafs\n");
			return 1;
		}
		return cafs_command_main(m, argc, argv);
	}
	/* casync's command line, for scripts and updaters written for it */
	if (!strcmp(base, "casync"))
		return cafs_casync_main(argc, argv, CAFS_CASYNC_NAMED);
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("cafs %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		const struct cafs_command *c = command_find(argv[2]);
		if (!c)
			return cafs_usage_error(NULL, "unknown command '%s'", argv[2]);
		cafs_command_help(c, stdout);
		return 0;
	}
	/* hidden: the bash completion script, from the tables above (the
	 * build writes it; completion.c) */
	if (!strcmp(argv[1], "completion")) {
		if (argc != 3 || strcmp(argv[2], "bash"))
			return cafs_usage_error(NULL, "completion: expected 'bash'");
		return cafs_completion_bash(commands, sizeof(commands) / sizeof(commands[0]), stdout);
	}
	/* casync's remote end when $CASYNC_REMOTE_PATH names cafs itself:
	 * `cafs [--rate-limit-bps=N] pull|push - ARCHIVE INDEX STORE...` */
	int verb = strncmp(argv[1], "--rate-limit-bps=", 17) ? 1 : 2;
	if (verb < argc && (!strcmp(argv[verb], "pull") || !strcmp(argv[verb], "push")))
		return cafs_casync_main(argc, argv, CAFS_CASYNC_NAMED);
	/* casync's global options before the command: `cafs -v --store=S list X` */
	if (argv[1][0] == '-' && argv[1][1])
		return cafs_casync_main(argc, argv, CAFS_CASYNC_PREFIX);
	const struct cafs_command *c = command_find(argv[1]);
	if (c)
		return cafs_command_main(c, argc - 1, argv + 1);
	/* `cafs SOURCE MOUNTPOINT [OPTIONS]`: the mount is the default command */
	const struct cafs_command *m = command_find("mount");
	if (m && argv[1][0] != '-' && argc >= 3)
		return cafs_command_main(m, argc, argv);
	if (argv[1][0] == '-')
		return cafs_usage_error(NULL, "unknown option '%s'", argv[1]);
	return cafs_usage_error(NULL, "unknown command '%s'", argv[1]);
}
