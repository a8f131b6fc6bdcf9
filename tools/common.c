/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common.c - what several subcommands share: option parsing and printing. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "base/json_out.h"
#include "base/location.h"
#include "base/log.h"
#include "image/source.h"

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


static int trusted_key_add(const char *cmd, struct cafs_trusted_keys *tk, const char *path)
{
	struct ca_minisign_key *n = realloc(tk->keys, (tk->n + 1) * sizeof(*n));
	char why[128];
	if (!n)
		return ca_log_error_errno(ENOMEM, "%s", path), 1;
	tk->keys = n;
	/* a bad argument, like a bad number: a usage error, before anything
	 * runs; checked as a key of the trusted key directory (trust.h) */
	if (ca_source_read_trusted_key(path, &n[tk->n], why, sizeof(why)) < 0)
		return cafs_usage_error(cmd, "--trusted-key %s: %s", path, why);
	tk->n++;
	return 0;
}

int cafs_trust_option(const char *cmd, int id, const char *arg, struct cafs_trusted_keys *tk)
{
	if (id == CAFS_OPT_TRUSTED_KEY)
		return trusted_key_add(cmd, tk, arg);
	if (id == CAFS_OPT_ALLOW_DOWNGRADE) {
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

int cafs_common_option(const struct cafs_command *cmd, int c, int *verbosity)
{
	switch (c) {
	case 'v':
		(*verbosity)++;
		return -1;
	case 'q':
		*verbosity = -1;
		return -1;
	case 'h':
		cafs_command_help(cmd, stdout);
		return 0;
	default:
		return cafs_usage_error(cmd->name, "bad option");
	}
}

int cafs_usage_error(const char *cmd, const char *fmt, ...)
{
	char raw[512], msg[520];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	ca_location_redact_text(raw, msg, sizeof(msg)); /* a usage error may quote a URL */
	fprintf(stderr, "cafs: %s%s%s\nTry 'cafs %s%s--help'.\n", cmd ? cmd : "", cmd ? ": " : "", msg,
	        cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

/* the options every command takes, after its own in the help */
static const struct cafs_option common_options[] = {
	{ "verbose", 'v', NULL, 'v', .help = "more messages (repeat for debug)" },
	{ "quiet", 'q', NULL, 'q', .help = "errors only" },
	{ "help", 'h', NULL, 'h', .help = "this help" },
	{ NULL },
};
#define COMMON_HELP_COLUMN 26

/* "  -s, --store=DIR|URL     chunk store ...": the option's names, then its
 * help from column col on (two blanks after names that reach it) */
static void option_help(FILE *f, const struct cafs_option *o, int col)
{
	int n = o->short_name ? fprintf(f, "  -%c, --%s", o->short_name, o->name) : fprintf(f, "      --%s", o->name);
	if (o->arg)
		n += fprintf(f, "=%s", o->arg);
	fprintf(f, "%*s", n < col ? col - n : 2, "");
	for (const char *line = o->help; *line;) {
		size_t len = strcspn(line, "\n");
		if (line != o->help)
			fprintf(f, "%*s", col, "");
		fprintf(f, "%.*s\n", (int)len, line);
		line += len + (line[len] == '\n');
	}
}

void cafs_command_help(const struct cafs_command *c, FILE *f)
{
	fprintf(f, "Usage: cafs %s\n\n%s", c->synopsis, c->help_head ? c->help_head : "");
	for (const struct cafs_option *o = c->options; o && o->name; o++)
		if (o->help)
			option_help(f, o, c->help_column);
	fputs(c->help_tail ? c->help_tail : "", f);
	for (const struct cafs_option *o = common_options; o->name; o++)
		option_help(f, o, COMMON_HELP_COLUMN);
}

const struct cafs_option *cafs_command_option(const struct cafs_command *c, int id)
{
	for (int t = 0; t < 2; t++)
		for (const struct cafs_option *o = t ? common_options : c->options; o && o->name; o++)
			if (o->id == id)
				return o;
	return NULL;
}

/* o is given to verb (a command without verbs: every option is) */
static bool for_verb(const struct cafs_command *c, const struct cafs_option *o, int verb)
{
	return !c->verbs || !o->verbs || (o->verbs & (1u << verb));
}

/* the id of the option getopt returned as c: long options return their id,
 * short ones their letter */
static int option_id(const struct cafs_command *c, int verb, int ch)
{
	for (const struct cafs_option *o = c->options; ch < 0x100 && o && o->name; o++)
		if (o->short_name && o->short_name == ch && for_verb(c, o, verb))
			return o->id;
	return ch;
}

/* A command with verbs: argv[1] is one (into q->verb). -1 to go on, or the
 * exit code (-h instead of a verb: 0 after the help). */
static int parse_verb(const struct cafs_command *c, struct cafs_request *q, int argc, char **argv)
{
	if (argc < 2) {
		char list[256];
		size_t n = 0, len = 0;
		while (c->verbs[n])
			n++;
		list[0] = 0;
		for (size_t i = 0; i < n && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
			                        c->verbs[i]);
		return cafs_usage_error(c->name, "expected a verb: %s", list);
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		cafs_command_help(c, stdout);
		return 0;
	}
	for (int i = 0; c->verbs[i]; i++)
		if (!strcmp(argv[1], c->verbs[i])) {
			q->verb = i;
			return -1;
		}
	return cafs_usage_error(c->name, "unknown verb '%s'", argv[1]);
}

int cafs_command_parse(const struct cafs_command *c, struct cafs_request *q, int argc, char **argv)
{
	int shift = 0;
	if (c->verbs) {
		int e = parse_verb(c, q, argc, argv);
		if (e >= 0)
			return e;
		shift = 1; /* getopt parses the verb's arguments, with the verb as argv[0] */
	}
	argc -= shift;
	argv += shift;
	size_t n = 0, k = 0, s = 0;
	for (const struct cafs_option *o = c->options; o && o->name; o++)
		n++;
	for (const struct cafs_option *o = common_options; o->name; o++)
		n++;
	struct option *lo = calloc(n + 1, sizeof(*lo));
	char *shortopts = malloc(2 * n + 1);
	char name[64], *arg0 = argv[0];
	int ch, r = -1;
	if (!lo || !shortopts) {
		r = (ca_log_error_errno(ENOMEM, "%s", c->name), 1);
		goto out;
	}
	for (int t = 0; t < 2; t++)
		for (const struct cafs_option *o = t ? common_options : c->options; o && o->name; o++) {
			if (!for_verb(c, o, q->verb))
				continue;
			lo[k++] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
			                           o->short_name ? o->short_name : o->id };
			if (o->short_name) {
				shortopts[s++] = o->short_name;
				if (o->arg)
					shortopts[s++] = ':';
			}
		}
	shortopts[s] = 0;
	/* getopt reports bad options itself, prefixed with argv[0]: "cafs:
	 * CMD", so that every message on stderr starts with "cafs: "; optind
	 * = 0, a full restart of getopt for each parse */
	snprintf(name, sizeof(name), "cafs: %s%s%s", c->name, shift ? " " : "", shift ? c->verbs[q->verb] : "");
	argv[0] = name;
	optind = 0;
	while (r < 0 && (ch = getopt_long(argc, argv, shortopts, lo, NULL)) >= 0) {
		int id = option_id(c, q->verb, ch);
		if (id == 'h' || id == '?' || id == ':') {
			r = cafs_common_option(c, id, &q->verbosity);
			break;
		}
		if (id == 'v' || id == 'q')
			(void)cafs_common_option(c, id, &q->verbosity);
		int e = c->set(q, id, optarg);
		if (e)
			r = e;
	}
	if (r < 0) {
		cafs_set_verbosity(q->verbosity);
		int e = c->operands(q, argc - optind, argv + optind);
		if (e)
			r = e;
	}
out:
	argv[0] = arg0; /* name is gone with this call */
	free(lo);
	free(shortopts);
	return r;
}

struct cafs_request *cafs_request_new(const struct cafs_command *c)
{
	struct cafs_request *q = calloc(1, c->request_size);
	if (!q)
		return ca_log_error_errno(ENOMEM, "%s", c->name), NULL;
	if (c->init)
		c->init(q);
	return q;
}

void cafs_request_free(const struct cafs_command *c, struct cafs_request *q)
{
	if (q && c->release)
		c->release(q);
	free(q);
}

int cafs_command_main(const struct cafs_command *c, int argc, char **argv)
{
	struct cafs_request *q = cafs_request_new(c);
	if (!q)
		return 1;
	int r = cafs_command_parse(c, q, argc, argv);
	if (r < 0)
		r = c->run(q);
	cafs_request_free(c, q);
	return r;
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
	if (stats->cached)
		ca_log_info("make cache: %llu bytes in %llu chunks taken unread, %llu bytes of files read",
		            (unsigned long long)stats->bytes_known, (unsigned long long)stats->chunks_known,
		            (unsigned long long)stats->file_bytes_read);
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

void cafs_json_name(const char *key, const char *s)
{
	printf("\"%s\":", key);
	ca_json_out_string(stdout, s, strlen(s));
	if (ca_json_lossy(s, strlen(s))) {
		printf(",\"%s_hex\":\"", key);
		for (const unsigned char *u = (const unsigned char *)s; *u; u++)
			printf("%02x", *u);
		putchar('"');
	}
}
