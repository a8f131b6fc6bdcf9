/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * log.h - one-line diagnostics, "cafs: <what>: <why>", sent to a logger.
 *
 * A logger says where messages go (a callback, or stderr) and which pass
 * (its level). It belongs to whoever made it: the cafs command's main, a
 * library context (cafs_ctx), a mount. There is no process-wide logger:
 * each thread logs to the one it was told to use (ca_log_use, a
 * thread-local pointer); threads started with ca_thread_create (thread.h)
 * inherit their creator's. A thread with none logs errors and warnings to
 * stderr, so nothing is lost silently.
 *
 * Thread-safe: each message is formatted into a local buffer and handed
 * over at once (stderr: one write(2)). The *_errno forms return -abs(err),
 * so a caller can log and return in one statement. %m is not supported;
 * pass errno values.
 */
#ifndef CA_LOG_H
#define CA_LOG_H

#include <stdbool.h>

enum ca_log_level { CA_LOG_SILENT = -1, CA_LOG_ERROR, CA_LOG_WARNING, CA_LOG_INFO, CA_LOG_DEBUG };

/* Gets each message that passes the level, as one line without the
 * "cafs: " prefix or a newline. Called on the logging thread: it must be
 * thread-safe. */
typedef void (*ca_log_fn)(void *userdata, enum ca_log_level level, const char *line);

struct ca_logger {
	ca_log_fn fn;   /* NULL: stderr, "cafs: [warning: ]<line>\n" */
	void *userdata;
	int level;      /* messages above it are dropped; atomic (ca_logger_set_level) */
};

#define CA_LOGGER_STDERR(lvl) ((struct ca_logger){ .fn = NULL, .userdata = NULL, .level = (lvl) })

/* Safe from any thread, e.g. to go quiet once the user interrupted us. */
void ca_logger_set_level(struct ca_logger *l, enum ca_log_level level);
enum ca_log_level ca_logger_get_level(const struct ca_logger *l);

/* This thread's logger from now on (NULL: none). Returns the previous one,
 * for a caller that restores it. The logger must outlive its use. */
struct ca_logger *ca_log_use(struct ca_logger *l);
struct ca_logger *ca_log_current(void);

/* The current logger's level (set: no-op without a logger). */
void ca_log_set_level(enum ca_log_level level);
enum ca_log_level ca_log_get_level(void);

void ca_log(enum ca_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Logs "fmt: strerror(err)" and returns -abs(err). */
int ca_log_errno(enum ca_log_level level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define ca_log_error(...) ca_log(CA_LOG_ERROR, __VA_ARGS__)
#define ca_log_warning(...) ca_log(CA_LOG_WARNING, __VA_ARGS__)
#define ca_log_info(...) ca_log(CA_LOG_INFO, __VA_ARGS__)
#define ca_log_debug(...) ca_log(CA_LOG_DEBUG, __VA_ARGS__)
#define ca_log_error_errno(err, ...) ca_log_errno(CA_LOG_ERROR, (err), __VA_ARGS__)
#define ca_log_warning_errno(err, ...) ca_log_errno(CA_LOG_WARNING, (err), __VA_ARGS__)
#define ca_log_debug_errno(err, ...) ca_log_errno(CA_LOG_DEBUG, (err), __VA_ARGS__)

/* strerror without the thread-safety trap, plus our own codes (EBADMSG reads "corrupt data"). */
const char *ca_strerror(int err, char *buf, unsigned len);

#endif
