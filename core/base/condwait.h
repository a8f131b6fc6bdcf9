/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * condwait.h - a condition wait that gives up after a while: for waits
 * that must also notice a cancel flag, which a signal handler sets
 * without signalling any condition.
 */
#ifndef CA_CONDWAIT_H
#define CA_CONDWAIT_H

#include <pthread.h>
#include <time.h>

/* The moment ms milliseconds from now, for pthread_cond_timedwait. */
static inline struct timespec ca_deadline_ms(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

/* pthread_cond_wait for at most ms milliseconds (lock held, as for it). */
static inline void ca_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, unsigned ms)
{
	struct timespec ts = ca_deadline_ms(ms);
	pthread_cond_timedwait(cond, lock, &ts);
}

#endif
