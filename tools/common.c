/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.c - what several subcommands share: option parsing and printing. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "base/log.h"
#include "store/make.h"
#include "trust/trust.h"

void cafs_set_verbosity(int level)
{
	if (level < 0)
		ca_log_set_level(CA_LOG_ERROR);
	else if (level == 0)
		ca_log_set_level(CA_LOG_WARNING);
	else if (level == 1)
		ca_log_set_level(CA_LOG_INFO);
	else
		ca_log_set_level(CA_LOG_DEBUG);
}

int cafs_parse_threads(const char *s, unsigned *ret)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > 64)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}


int cafs_trusted_key_add(const char *cmd, struct cafs_trusted_keys *tk, const char *path)
{
	struct ca_minisign_key *n = realloc(tk->keys, (tk->n + 1) * sizeof(*n));
	char why[CA_TRUST_WHY_MAX];
	if (!n)
		return ca_log_error_errno(ENOMEM, "%s", path), 1;
	tk->keys = n;
	/* a bad argument, like a bad number: a usage error, before anything
	 * runs; checked as a key of the trusted key directory (trust.h) */
	if (ca_trust_read_key(AT_FDCWD, path, &n[tk->n], why) < 0)
		return cafs_usage_error(cmd, "--trusted-key %s: %s", path, why);
	tk->n++;
	return 0;
}

int cafs_trust_policy_option(const char *cmd, int c, const char *arg, struct cafs_trusted_keys *tk)
{
	if (c == CAFS_OPT_ALLOW_DOWNGRADE) {
		tk->allow_downgrade = true;
		return 0;
	}
	/* a file name, as minisign's file: gives it: no directory */
	if (!arg[0] || strchr(arg, '/') || strlen(arg) > NAME_MAX)
		return cafs_usage_error(cmd, "--signed-name=%s: expected a file name (no '/')", arg);
	tk->signed_name = arg;
	return 0;
}

void cafs_trusted_keys_release(struct cafs_trusted_keys *tk)
{
	free(tk->keys);
	*tk = (struct cafs_trusted_keys){ 0 };
}

void cafs_trusted_keys_apply(const struct cafs_trusted_keys *tk, struct ca_image_opts *io)
{
	io->trusted_keys = tk ? tk->keys : NULL;
	io->n_trusted_keys = tk ? tk->n : 0;
	io->allow_downgrade = tk && tk->allow_downgrade;
	io->signed_name = tk ? tk->signed_name : NULL;
}

int cafs_common_option(const char *cmd, int c, int *verbosity)
{
	switch (c) {
	case 'v':
		(*verbosity)++;
		return -1;
	case 'q':
		*verbosity = -1;
		return -1;
	case 'h':
		cafs_command_help(cafs_command_find(cmd), stdout);
		return 0;
	default:
		return cafs_usage_error(cmd, "bad option");
	}
}

void cafs_print_digest(const uint8_t d[CA_CHUNK_ID_SIZE])
{
	char hex[2 * CA_CHUNK_ID_SIZE + 1];
	ca_id_to_hex(d, hex);
	printf("%s\n", hex);
}

void cafs_log_make_stats(const struct ca_make_stats *stats)
{
	ca_log_info("%llu bytes, %llu chunks, %llu new (%llu bytes stored)", (unsigned long long)stats->bytes,
	            (unsigned long long)stats->chunks, (unsigned long long)stats->chunks_new,
	            (unsigned long long)stats->bytes_stored);
}

int cafs_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]))
			return *ret = true, 0;
		if (!strcasecmp(s, no[i]))
			return *ret = false, 0;
	}
	return -EINVAL;
}

/* casync's uid range when only --uid-shift is given */
#define DEFAULT_UID_RANGE 0x10000u

static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*ret = v;
	return 0;
}

int cafs_parse_uid_shift(const char *s, struct ca_uid_shift *u)
{
	uint64_t v;
	bool b;
	if (!u->on && !u->range)
		u->range = DEFAULT_UID_RANGE;
	/* a uid (not the two that mean "none"), else yes/no */
	if (parse_u64(s, &v) == 0 && v < UINT32_MAX && v != UINT16_MAX) {
		u->shift = (uint32_t)v;
		u->on = true;
		return 0;
	}
	if (cafs_parse_bool(s, &b) < 0)
		return -EINVAL;
	u->on = b;
	return 0;
}

int cafs_parse_uid_range(const char *s, struct ca_uid_shift *u)
{
	uint64_t v;
	bool b;
	if (parse_u64(s, &v) == 0 && v >= 1 && v <= UINT64_C(0x100000000)) {
		u->range = v == UINT64_C(0x100000000) ? 0 : v;
		u->on = true;
		return 0;
	}
	if (cafs_parse_bool(s, &b) < 0)
		return -EINVAL;
	if (!u->on && !u->range)
		u->range = DEFAULT_UID_RANGE;
	u->on = b;
	return 0;
}
