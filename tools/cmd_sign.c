/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cmd_sign.c - `cafs sign -s KEY INDEX`: INDEX.minisig as `minisign -S`
 * writes it, from a minisign secret key (encrypted: the password is read
 * from the terminal without echo, or as one line of standard input).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cmd.h"
#include "base/log.h"

/* One line of standard input, without echo on a terminal: 0, or -1. */
static int read_password(char *buf, size_t size, void *userdata)
{
	(void)userdata;
	struct termios old, quiet;
	bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
	int r = 0;
	if (tty) {
		fputs("Password: ", stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	if (!fgets(buf, (int)size, stdin))
		r = -1;
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	buf[strcspn(buf, "\r\n")] = 0;
	return r;
}

/* what `cafs sign` is asked to do */
struct sign_request {
	struct cafs_request base;
	const char *key_path, *trusted, *untrusted, *name; /* -s, -t, -c, -n */
	bool legacy;                                       /* -l */
	const char *in;
};

static int sign_set(struct cafs_request *q, int id, const char *arg)
{
	struct sign_request *g = (struct sign_request *)q;
	switch (id) {
	case CAFS_OPT_SECRET_KEY:
		g->key_path = arg;
		return 0;
	case CAFS_OPT_LEGACY:
		g->legacy = true;
		return 0;
	case CAFS_OPT_TRUSTED_COMMENT:
		g->trusted = arg;
		return 0;
	case CAFS_OPT_NAME:
		/* the name it is published under, as minisign's file: gives it */
		if (!arg[0] || strchr(arg, '/'))
			return cafs_usage_error("sign", "--name=%s: expected a file name (no '/')", arg);
		g->name = arg;
		return 0;
	case CAFS_OPT_COMMENT:
		g->untrusted = arg;
		return 0;
	default:
		return 0;
	}
}

static int sign_operands(struct cafs_request *q, int n, char **arg)
{
	struct sign_request *g = (struct sign_request *)q;
	if (n != 1)
		return cafs_usage_error("sign", "expected one INDEX");
	if (!g->key_path)
		return cafs_usage_error("sign", "-s SECRETKEY is required");
	g->in = arg[0];
	return 0;
}

static int sign_run(struct cafs_request *q)
{
	const struct sign_request *g = (const struct sign_request *)q;
	const char *in = g->in;
	struct ca_image_sign_opts so = { .secret_key = g->key_path, .password = read_password, .legacy = g->legacy,
		                         .name = g->name, .trusted_comment = g->trusted,
		                         .untrusted_comment = g->untrusted };

	enum ca_image_kind kind = ca_location_image_kind(in);
	if (ca_location_is_oci(in) && (kind == CA_IMAGE_BLOB_INDEX || kind == CA_IMAGE_ARCHIVE_INDEX))
		return ca_image_sign(in, &so) < 0 ? 1 : 0; /* a registry's: fetched, signed, uploaded (logs) */
	if (ca_location_kind(in) != CA_LOCATION_PATH || (kind != CA_IMAGE_BLOB_INDEX && kind != CA_IMAGE_ARCHIVE_INDEX))
		return cafs_usage_error("sign", "%s: a local index (.caibx, .caidx) is signed, not an archive or URL", in);
	return ca_image_sign(ca_location_path(in), &so) < 0 ? 1 : 0; /* logs */
}

static const struct cafs_option sign_options[] = {
	{ "secret-key", 's', "FILE", CAFS_OPT_SECRET_KEY,
	  .help = "a minisign secret key (minisign -G; asks for its password\n"
	  "when encrypted, or reads it from standard input)" },
	{ "legacy", 'l', NULL, CAFS_OPT_LEGACY,
	  .help = "the legacy signature (minisign -S -l) instead of the\n"
	  "prehashed one" },
	{ "name", 'n', "NAME", CAFS_OPT_NAME,
	  .help = "the file name it is published under (default: INDEX's);\n"
	  "signed with the time, which cafs checks" },
	{ "trusted-comment", 't', "TEXT", CAFS_OPT_TRUSTED_COMMENT,
	  .help = "more signed text, after the timestamp and name" },
	{ "comment", 'c', "TEXT", CAFS_OPT_COMMENT,
	  .help = "unsigned comment" },
	{ NULL },
};

const struct cafs_command cafs_command_sign = {
	.name = "sign",
	.synopsis = "sign -s SECRETKEY [OPTIONS] INDEX",
	.options = sign_options,
	.help_column = 26,
	.help_tail = "Writes INDEX.minisig as minisign -S does; see SECURITY in cafs(1).\n",
	.request_size = sizeof(struct sign_request),
	.set = sign_set,
	.operands = sign_operands,
	.run = sign_run,
};

