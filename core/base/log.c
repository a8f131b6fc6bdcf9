/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* log.c - stderr diagnostics, one write per message. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/location.h"
#include "base/log.h"

/* Thread-local, not process-wide: each thread logs where its owner said. */
static __thread struct ca_logger *current;

void ca_logger_set_level(struct ca_logger *l, enum ca_log_level level)
{
	__atomic_store_n(&l->level, (int)level, __ATOMIC_RELAXED);
}

enum ca_log_level ca_logger_get_level(const struct ca_logger *l)
{
	return (enum ca_log_level)__atomic_load_n(&l->level, __ATOMIC_RELAXED);
}

struct ca_logger *ca_log_use(struct ca_logger *l)
{
	struct ca_logger *old = current;
	current = l;
	return old;
}

struct ca_logger *ca_log_current(void)
{
	return current;
}

void ca_log_set_level(enum ca_log_level level)
{
	if (current)
		ca_logger_set_level(current, level);
}

enum ca_log_level ca_log_get_level(void)
{
	return current ? ca_logger_get_level(current) : CA_LOG_WARNING;
}

const char *ca_strerror(int err, char *buf, unsigned len)
{
	err = abs(err);
	/* our own meanings (source.h): what a user should read */
	if (err == EBADMSG)
		return "corrupt data";
	if (err == ENOLINK)
		return "a chunk is in no store";
	if (err == EUCLEAN)
		return "a chunk is corrupt";
	if (err == ENOMEDIUM)
		return "a chunk is not in the cache (offline)";
	if (err == EREMCHG)
		return "redirected from https to another scheme: refused";
	/* GNU strerror_r returns a pointer that may or may not be buf */
	return strerror_r(err, buf, len);
}

static void emit(enum ca_log_level level, const char *fmt, va_list ap, int err)
{
	static const char prefix[] = "cafs: ";
	char line[2048];
	/* the prefix is there for stderr; a callback gets the line after it */
	int n = snprintf(line, sizeof(line), "%s%s", prefix, level == CA_LOG_WARNING ? "warning: " : "");
	if (n < 0)
		return;
	int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	if (err) {
		char eb[128];
		const char *es = ca_strerror(err, eb, sizeof(eb));
		int k = snprintf(line + n, sizeof(line) - n, ": %s", es);
		if (k > 0)
			n += k;
		if (n > (int)sizeof(line) - 2)
			n = sizeof(line) - 2;
	}
	line[n] = 0;
	/* a line cut inside a URL may have lost the '@' or '?' that marks what
	 * to hide: the cut URL shows only its scheme */
	if (n >= (int)sizeof(line) - 2) {
		char *last = NULL;
		for (char *u = strstr(line, "://"); u; u = strstr(u + 3, "://"))
			last = u;
		if (last && !strpbrk(last, " \t\n\"'<>")) {
			n = (int)(last + 3 - line);
			if (n + 3 <= (int)sizeof(line) - 2) { /* room for "..." and the newline stderr adds */
				memcpy(line + n, "...", 3);
				n += 3;
			}
			line[n] = 0;
		}
	}
	/* the one net under every message: whatever a caller put in, a URL's
	 * password or token never reaches a terminal, a log file or a callback */
	if (strstr(line, "://")) {
		char red[sizeof(line)];
		n = (int)ca_location_redact_text(line, red, sizeof(red) - 1);
		memcpy(line, red, (size_t)n + 1);
	}
	if (current && current->fn) {
		current->fn(current->userdata, level, line + sizeof(prefix) - 1);
		return;
	}
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}

void ca_log(enum ca_log_level level, const char *fmt, ...)
{
	if ((int)level > (int)ca_log_get_level())
		return;
	va_list ap;
	va_start(ap, fmt);
	emit(level, fmt, ap, 0);
	va_end(ap);
}

int ca_log_errno(enum ca_log_level level, int err, const char *fmt, ...)
{
	err = abs(err);
	if ((int)level <= (int)ca_log_get_level()) {
		va_list ap;
		va_start(ap, fmt);
		emit(level, fmt, ap, err);
		va_end(ap);
	}
	return -err;
}
