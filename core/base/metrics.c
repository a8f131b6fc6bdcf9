/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* metrics.c - counters as OpenMetrics, Prometheus 0.0.4 text or JSON (metrics.h). */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/json_out.h"
#include "base/metrics.h"

static void put(struct ca_metrics *m, const char *p, size_t k)
{
	if (m->overflow || m->len + k >= m->cap) {
		m->overflow = true;
		return;
	}
	memcpy(m->buf + m->len, p, k);
	m->len += k;
	m->buf[m->len] = 0;
}

static void puts_(struct ca_metrics *m, const char *s)
{
	put(m, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(struct ca_metrics *m, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		m->overflow = true;
	else
		put(m, tmp, (size_t)n);
}

/* a value of the text formats: '\' and '"' (label values only) and line
 * breaks escaped, bytes that are not UTF-8 as U+FFFD */
static void put_text_escaped(struct ca_metrics *m, const char *s, bool quotes)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		size_t k = ca_utf8_seq_len(u + i, n - i);
		if (!k)
			puts_(m, "\xef\xbf\xbd"), k = 1;
		else if (u[i] == '\\')
			puts_(m, "\\\\");
		else if (u[i] == '\n')
			puts_(m, "\\n");
		else if (u[i] == '"' && quotes)
			puts_(m, "\\\"");
		else
			put(m, s + i, k);
		i += k;
	}
}

static void put_json(struct ca_metrics *m, const char *s)
{
	char small[256];
	size_t need = ca_json_out_string_buf(small, sizeof(small), s, strlen(s));
	if (need < sizeof(small)) {
		put(m, small, need);
		return;
	}
	/* long: written in pieces of whole characters */
	puts_(m, "\"");
	for (size_t i = 0, n = strlen(s); i < n;) {
		size_t k = ca_utf8_seq_len((const unsigned char *)s + i, n - i);
		k = k ? k : 1;
		size_t len = ca_json_out_string_buf(small, sizeof(small), s + i, k);
		put(m, small + 1, len - 2);
		i += k;
	}
	puts_(m, "\"");
}

static const char *type_name(enum ca_metric_type t)
{
	return t == CA_METRIC_COUNTER ? "counter" : t == CA_METRIC_GAUGE ? "gauge" : "histogram";
}

void ca_metrics_begin(struct ca_metrics *m, enum ca_metrics_format format, char *buf, size_t cap)
{
	*m = (struct ca_metrics){ .format = format, .buf = buf, .cap = cap };
	if (cap)
		buf[0] = 0;
	if (format == CA_METRICS_JSON)
		puts_(m, "{\"metrics\":[");
}

/* close the family being written (JSON: its samples) */
static void family_end(struct ca_metrics *m)
{
	if (m->family && m->format == CA_METRICS_JSON)
		puts_(m, "]}");
}

void ca_metrics_family(struct ca_metrics *m, const char *name, enum ca_metric_type type, const char *unit,
                       const char *help)
{
	family_end(m);
	m->family = name;
	m->type = type;
	m->n_samples = 0;
	switch (m->format) {
	case CA_METRICS_JSON:
		putf(m, "%s\n{\"name\":\"%s\",\"type\":\"%s\",\"unit\":\"%s\",\"help\":", m->n_families ? "," : "", name,
		     type_name(type), unit ? unit : "");
		put_json(m, help);
		puts_(m, ",\"samples\":[");
		break;
	case CA_METRICS_OPENMETRICS:
		putf(m, "# TYPE %s %s\n", name, type_name(type));
		if (unit)
			putf(m, "# UNIT %s %s\n", name, unit);
		putf(m, "# HELP %s ", name);
		put_text_escaped(m, help, false);
		puts_(m, "\n");
		break;
	case CA_METRICS_PROMETHEUS: {
		/* 0.0.4: the TYPE names the samples a counter has */
		const char *sfx = type == CA_METRIC_COUNTER ? "_total" : "";
		putf(m, "# HELP %s%s ", name, sfx);
		put_text_escaped(m, help, false);
		putf(m, "\n# TYPE %s%s %s\n", name, sfx, type_name(type));
		break;
	}
	}
	m->n_families++;
}

static void sample_head(struct ca_metrics *m, const char *suffix, const char *const *labels, const char *le)
{
	if (m->format == CA_METRICS_JSON) {
		putf(m, "%s{\"name\":\"%s%s\",\"labels\":{", m->n_samples ? "," : "", m->family, suffix);
		bool first = true;
		for (int t = 0; t < 2; t++)
			for (const char *const *l = t ? labels : m->common_labels; l && l[0]; l += 2, first = false) {
				putf(m, "%s\"%s\":", first ? "" : ",", l[0]);
				put_json(m, l[1]);
			}
		if (le)
			putf(m, "%s\"le\":\"%s\"", first ? "" : ",", le);
		puts_(m, "},\"value\":");
	} else {
		putf(m, "%s%s", m->family, suffix);
		bool first = true;
		for (int t = 0; t < 2; t++)
			for (const char *const *l = t ? labels : m->common_labels; l && l[0]; l += 2, first = false) {
				putf(m, "%s%s=\"", first ? "{" : ",", l[0]);
				put_text_escaped(m, l[1], true);
				puts_(m, "\"");
			}
		if (le)
			putf(m, "%sle=\"%s\"", first ? "{" : ",", le);
		bool any = !first || le;
		puts_(m, any ? "} " : " ");
	}
	m->n_samples++;
}

static void sample_tail(struct ca_metrics *m)
{
	puts_(m, m->format == CA_METRICS_JSON ? "}" : "\n");
}

void ca_metrics_u64(struct ca_metrics *m, const char *suffix, const char *const *labels, uint64_t v)
{
	sample_head(m, suffix, labels, NULL);
	putf(m, "%" PRIu64, v);
	sample_tail(m);
}

void ca_metrics_real(struct ca_metrics *m, const char *suffix, const char *const *labels, double v)
{
	sample_head(m, suffix, labels, NULL);
	putf(m, "%.6f", v);
	sample_tail(m);
}

void ca_metrics_histogram_us(struct ca_metrics *m, const char *const *labels, const uint64_t *bounds_us,
                             const uint64_t *counts, size_t n, uint64_t sum_us)
{
	uint64_t total = 0;
	char le[32];
	for (size_t i = 0; i <= n; i++) {
		total += counts[i];
		if (i < n)
			snprintf(le, sizeof(le), "%g", (double)bounds_us[i] / 1e6);
		sample_head(m, "_bucket", labels, i < n ? le : "+Inf");
		putf(m, "%" PRIu64, total);
		sample_tail(m);
	}
	ca_metrics_u64(m, "_count", labels, total);
	ca_metrics_real(m, "_sum", labels, (double)sum_us / 1e6);
}

size_t ca_metrics_end(struct ca_metrics *m)
{
	family_end(m);
	puts_(m, m->format == CA_METRICS_JSON ? "\n]}\n" : "# EOF\n");
	return m->overflow ? 0 : m->len;
}

void ca_metrics_url_label(const char *url, char *out, size_t cap)
{
	size_t o = 0;
	const char *p = url, *scheme = strstr(url, "://");
	/* scheme://[userinfo@]host[:port]/path[?query][#fragment] */
	if (scheme && scheme == url + strcspn(url, ":/?#")) {
		const char *auth = scheme + 3;
		size_t alen = strcspn(auth, "/?#");
		const char *at = memchr(auth, '@', alen);
		size_t k = (size_t)(auth - url);
		while (at && memchr(at + 1, '@', alen - (size_t)(at + 1 - auth)))
			at = memchr(at + 1, '@', alen - (size_t)(at + 1 - auth)); /* the last '@' ends userinfo */
		for (size_t i = 0; i < k && o + 1 < cap; i++)
			out[o++] = url[i];
		p = at ? at + 1 : auth;
		for (; *p && *p != '?' && *p != '#' && o + 1 < cap; p++)
			out[o++] = *p;
	} else {
		for (; *p && o + 1 < cap; p++)
			out[o++] = *p;
	}
	out[o] = 0;
}
