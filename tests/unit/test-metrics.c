/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-metrics.c - base/metrics.h and base/json_out.h on hostile input: label
 * values with quotes, backslashes, line breaks, control characters and
 * bytes that are not UTF-8 come out escaped in each format; a URL label
 * keeps no userinfo, query or fragment; a snapshot too big for its buffer
 * says so; the three formats' framing (counter names, # EOF, JSON).
 * (stats-metrics.sh parses a real mount's output with prometheus_client.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_out.h"
#include "base/metrics.h"
#include "tap.h"

static void check_json(const char *in, size_t n, const char *want)
{
	char buf[256];
	size_t need = ca_json_out_string_buf(buf, sizeof(buf), in, n);
	check_str(buf, want);
	check_u64(need, ==, strlen(want));
}

static void check_label(const char *url, const char *want)
{
	char buf[256];
	ca_metrics_url_label(url, buf, sizeof(buf));
	check_str(buf, want);
}

/* one counter with a label value v, in format f */
static void render(enum ca_metrics_format f, const char *v, char *buf, size_t cap)
{
	struct ca_metrics m;
	const char *l[] = { "store", v, NULL };
	ca_metrics_begin(&m, f, buf, cap);
	ca_metrics_family(&m, "cafs_x", CA_METRIC_COUNTER, NULL, "a \\ help\nline");
	ca_metrics_u64(&m, "_total", l, 7);
	check(ca_metrics_end(&m) > 0);
}

int main(void)
{
	char buf[1024];
	static const uint64_t bounds[] = { 1000, 500000 };
	static const uint64_t counts[] = { 2, 1, 3 };

	/* JSON strings */
	check_json("plain", 5, "\"plain\"");
	check_json("q\"b\\n\nt\tc\x01\x1f\x7f", 12, "\"q\\\"b\\\\n\\nt\\tc\\u0001\\u001f\\u007f\"");
	check_json("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");
	check_json("a\xff" "b", 3, "\"a\xef\xbf\xbd" "b\"");
	check_json("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");         /* overlong */
	check_json("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* a surrogate */
	check_json("\xf4\x90\x80\x80", 4, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* past U+10FFFF */
	check_json("\xe2\x82", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");         /* cut short */
	check_json("a\0b", 3, "\"a\\u0000b\"");
	check(!ca_json_lossy("caf\xc3\xa9", 5) && ca_json_lossy("a\xff", 2));
	/* cut at a piece boundary: never half an escape */
	char small[5];
	size_t need = ca_json_out_string_buf(small, sizeof(small), "ab\ncd", 5);
	check_u64(need, ==, 8);
	check_str(small, "\"ab");

	/* a long string through the stream writer (pieces of 64 bytes): the
	 * same as in one piece, whatever sequence a piece boundary cuts */
	for (size_t shift = 0; shift < 4; shift++) {
		char in[300], *out = NULL, whole[2048];
		size_t len = 0, n = 0;
		for (size_t i = 0; i < shift; i++)
			in[n++] = 'a';
		while (n + 4 < sizeof(in)) {
			memcpy(in + n, "\xe2\x82\xac", 3); /* U+20AC, 3 bytes */
			n += 3;
			if (n % 7 == 0)
				in[n++] = (char)0xff;
			if (n % 11 == 0)
				in[n++] = '\n';
		}
		FILE *f = open_memstream(&out, &len);
		ca_json_out_string(f, in, n);
		fclose(f);
		ca_json_out_string_buf(whole, sizeof(whole), in, n);
		check_str(out, whole);
		free(out);
	}

	/* URL labels */
	check_label("http://user:secret@host:8080/store.castr?token=x#frag", "http://host:8080/store.castr");
	check_label("https://a@b@host/s", "https://host/s");
	check_label("s3+https://host/bucket/prefix?X-Amz-Signature=1", "s3+https://host/bucket/prefix");
	check_label("http://host?q", "http://host");
	check_label("/srv/store@x?y", "/srv/store@x?y"); /* a path is a path */

	/* hostile label values, each format */
	const char *hostile = "a\"b\\c\nd\xff";
	render(CA_METRICS_OPENMETRICS, hostile, buf, sizeof(buf));
	check_str(buf, "# TYPE cafs_x counter\n# HELP cafs_x a \\\\ help\\nline\n"
	               "cafs_x_total{store=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\"} 7\n# EOF\n");
	render(CA_METRICS_PROMETHEUS, hostile, buf, sizeof(buf));
	check_str(buf, "# HELP cafs_x_total a \\\\ help\\nline\n# TYPE cafs_x_total counter\n"
	               "cafs_x_total{store=\"a\\\"b\\\\c\\nd\xef\xbf\xbd\"} 7\n# EOF\n");
	render(CA_METRICS_JSON, hostile, buf, sizeof(buf));
	check_str(buf, "{\"metrics\":[\n{\"name\":\"cafs_x\",\"type\":\"counter\",\"unit\":\"\",\"help\":\"a \\\\ help\\nline\","
	               "\"samples\":[{\"name\":\"cafs_x_total\",\"labels\":{\"store\":\"a\\\"b\\\\c\\nd\xef\xbf\xbd\"},"
	               "\"value\":7}]}\n]}\n");

	/* a histogram: cumulative buckets in seconds, +Inf, _count, _sum */
	struct ca_metrics m;
	const char *l[] = { "store", "s", NULL };
	ca_metrics_begin(&m, CA_METRICS_OPENMETRICS, buf, sizeof(buf));
	ca_metrics_family(&m, "cafs_d_seconds", CA_METRIC_HISTOGRAM, "seconds", "d");
	ca_metrics_histogram_us(&m, l, bounds, counts, 2, 1500000);
	check(ca_metrics_end(&m) > 0);
	check_str(buf, "# TYPE cafs_d_seconds histogram\n# UNIT cafs_d_seconds seconds\n# HELP cafs_d_seconds d\n"
	               "cafs_d_seconds_bucket{store=\"s\",le=\"0.001\"} 2\n"
	               "cafs_d_seconds_bucket{store=\"s\",le=\"0.5\"} 3\n"
	               "cafs_d_seconds_bucket{store=\"s\",le=\"+Inf\"} 6\n"
	               "cafs_d_seconds_count{store=\"s\"} 6\n"
	               "cafs_d_seconds_sum{store=\"s\"} 1.500000\n# EOF\n");

	/* the labels of every sample come first */
	const char *common[] = { "mountpoint", "/mnt/a b", NULL };
	ca_metrics_begin(&m, CA_METRICS_OPENMETRICS, buf, sizeof(buf));
	m.common_labels = common;
	ca_metrics_family(&m, "cafs_g", CA_METRIC_GAUGE, NULL, "g");
	ca_metrics_u64(&m, "", NULL, 1);
	ca_metrics_u64(&m, "", l, 2);
	check(ca_metrics_end(&m) > 0);
	check_str(buf, "# TYPE cafs_g gauge\n# HELP cafs_g g\ncafs_g{mountpoint=\"/mnt/a b\"} 1\n"
	               "cafs_g{mountpoint=\"/mnt/a b\",store=\"s\"} 2\n# EOF\n");
	ca_metrics_begin(&m, CA_METRICS_JSON, buf, sizeof(buf));
	m.common_labels = common;
	ca_metrics_family(&m, "cafs_g", CA_METRIC_GAUGE, NULL, "g");
	ca_metrics_u64(&m, "", l, 2);
	check(ca_metrics_end(&m) > 0);
	check(strstr(buf, "\"labels\":{\"mountpoint\":\"/mnt/a b\",\"store\":\"s\"}") != NULL);

	/* too big: 0, never a cut text taken as whole */
	ca_metrics_begin(&m, CA_METRICS_OPENMETRICS, buf, 40);
	ca_metrics_family(&m, "cafs_x", CA_METRIC_COUNTER, NULL, "a help text that does not fit");
	ca_metrics_u64(&m, "_total", NULL, 1);
	check_u64(ca_metrics_end(&m), ==, 0);

	return tap_done();
}
