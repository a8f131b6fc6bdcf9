/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* progress.c - terminal progress bar. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "progress.h"

void cafs_progress_init(struct cafs_progress *p, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->label = label;
	p->total = total;
	p->enabled = isatty(STDERR_FILENO);
	p->start_ns = ca_now_ns();
	pthread_mutex_init(&p->lock, NULL);
}

static void human(uint64_t v, char *buf, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = v;
	int i = 0;
	while (d >= 1024 && i < 4)
		d /= 1024, i++;
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

void cafs_progress_update(void *arg, uint64_t done)
{
	struct cafs_progress *p = arg;
	if (!p->enabled)
		return;
	pthread_mutex_lock(&p->lock);
	uint64_t t = ca_now_ns();
	if (t - p->last_ns >= 100000000u || (p->total && done >= p->total)) {
		char a[32], b[32], rate[32];
		double secs = (t - p->start_ns) / 1e9;
		human(done, a, sizeof(a));
		human(secs > 0 ? (uint64_t)(done / secs) : 0, rate, sizeof(rate));
		if (p->total) {
			human(p->total, b, sizeof(b));
			int pct = (int)(done * 100 / p->total);
			char bar[31];
			int fill = pct * 30 / 100;
			memset(bar, '#', fill);
			memset(bar + fill, '.', 30 - fill);
			bar[30] = 0;
			fprintf(stderr, "\r%s [%s] %3d%% %s / %s, %s/s\033[K", p->label, bar, pct, a, b, rate);
		} else {
			fprintf(stderr, "\r%s %s, %s/s\033[K", p->label, a, rate);
		}
		p->drawn = true;
		p->last_ns = t;
	}
	pthread_mutex_unlock(&p->lock);
}

void cafs_progress_done(struct cafs_progress *p)
{
	if (p->enabled && p->drawn)
		fprintf(stderr, "\r\033[K");
	pthread_mutex_destroy(&p->lock);
}
