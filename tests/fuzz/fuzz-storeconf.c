/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-storeconf - the store settings file parser (storeconf.c): bytes
 * from a file anyone might have written before it was checked.
 *
 * Input: the file's text. Properties: parsing returns 0 or -EINVAL (or
 * -ENOMEM); a refusal is exactly one message, and no message holds a
 * control character or a value (every value in the seeds holds "!SECRET":
 * a '!' no key name that a message may repeat can hold); on success, every section is found again by a lookup of its
 * own (normalised) prefix.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "net/storeconf.h"

static unsigned n_msgs;
static bool bad_msg;

static void sink(void *userdata, enum ca_log_level level, const char *line)
{
	(void)userdata;
	(void)level;
	n_msgs++;
	for (const char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			bad_msg = true;
	if (strstr(line, "!SECRET"))
		bad_msg = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ca_logger lg = { .fn = sink, .level = CA_LOG_DEBUG };
	struct ca_storeconf *c;
	if (size > 65536)
		return 0;
	ca_log_use(&lg);
	n_msgs = 0;
	bad_msg = false;
	if (ca_storeconf_new(&c) < 0)
		return 0;
	int r = ca_storeconf_parse(c, "f.conf", (const char *)data, size);
	fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM, "parse returned %d", r);
	fuzz_check(r != -EINVAL || n_msgs == 1, "a refusal with %u messages", n_msgs);
	fuzz_check(!bad_msg, "a message holds a control character or a value");
	if (r == 0) {
		/* the prefixes are normalised URLs: each finds its own section */
		for (size_t i = 0; i < size; i++) {
			if (data[i] != '[')
				continue;
			const uint8_t *end = memchr(data + i, ']', size - i);
			if (!end)
				break;
			char *u = strndup((const char *)data + i + 1, (size_t)(end - data - i - 1));
			const struct ca_store_settings *s = u ? ca_storeconf_lookup(c, u) : NULL;
			if (s)
				fuzz_check(ca_storeconf_lookup(c, s->prefix) == s, "a prefix does not find itself");
			free(u);
		}
	}
	ca_storeconf_free(c);
	ca_log_use(NULL);
	return 0;
}
