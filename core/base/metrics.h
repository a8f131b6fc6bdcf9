/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * metrics.h - a snapshot of counters written as OpenMetrics 1.0 text, as
 * Prometheus' text format 0.0.4 (node_exporter's textfile collector) or as
 * JSON (docs/json.md), from one sequence of calls: so the three never
 * disagree on a name, a label or a value.
 *
 * A family (name, type, unit, help) is followed by its samples. Names are
 * the caller's constants ([a-z_:][a-z0-9_:]*); label values are untrusted
 * (store URLs, states) and escaped: in the text formats '\', '"' and a
 * line break as \\ \" \n, in JSON as json.h; bytes that are not UTF-8
 * become U+FFFD in either. A counter family is named without "_total"
 * (OpenMetrics' rule); its sample gets the suffix; in format 0.0.4 the
 * TYPE line names the sample. The text ends "# EOF" (a comment to 0.0.4
 * readers).
 *
 * Everything goes into one buffer of fixed size: ca_metrics_end says
 * whether it all fitted.
 */
#ifndef CA_METRICS_H
#define CA_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ca_metrics_format {
	CA_METRICS_OPENMETRICS,
	CA_METRICS_PROMETHEUS, /* text format 0.0.4 */
	CA_METRICS_JSON,
};

enum ca_metric_type { CA_METRIC_COUNTER, CA_METRIC_GAUGE, CA_METRIC_HISTOGRAM };

struct ca_metrics {
	enum ca_metrics_format format;
	/* labels of every sample, before its own (NULL-ended name, value
	 * pairs; NULL: none): set after ca_metrics_begin */
	const char *const *common_labels;
	char *buf;
	size_t cap, len;
	bool overflow;
	/* the family being written */
	const char *family;
	enum ca_metric_type type;
	unsigned n_families, n_samples;
};

/* Start writing into buf[0..cap). */
void ca_metrics_begin(struct ca_metrics *m, enum ca_metrics_format format, char *buf, size_t cap);
/* A family: name (a counter's without _total; with a unit, ending in
 * "_" unit), its unit ("bytes", "seconds"; NULL: none) and one line of help. */
void ca_metrics_family(struct ca_metrics *m, const char *name, enum ca_metric_type type, const char *unit,
                       const char *help);
/* One sample of the family: suffix after its name ("" for a gauge, "_total"
 * for a counter, "_bucket", "_count", "_sum" for a histogram); labels as
 * NULL-ended name, value pairs (NULL: none); an integer or a real value. */
void ca_metrics_u64(struct ca_metrics *m, const char *suffix, const char *const *labels, uint64_t v);
void ca_metrics_real(struct ca_metrics *m, const char *suffix, const char *const *labels, double v);
/* A histogram's samples from per-bucket counts (not cumulative): n bounds
 * (in microseconds, shown in seconds), counts[0..n] (the last: above every
 * bound), the sum in microseconds; labels as above (le is added). */
void ca_metrics_histogram_us(struct ca_metrics *m, const char *const *labels, const uint64_t *bounds_us,
                             const uint64_t *counts, size_t n, uint64_t sum_us);
/* Close the text: its length, or 0 when it did not fit in cap bytes. */
size_t ca_metrics_end(struct ca_metrics *m);

/* A URL as a label value: no userinfo (user:password@), no query and no
 * fragment (tokens live there), into out (cap > 0, NUL-terminated, cut if
 * need be). A path is copied as it is. */
void ca_metrics_url_label(const char *url, char *out, size_t cap);

#endif
