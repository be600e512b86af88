/*
 * Clock-alignment shim for checking ratelab's nginx_limit_req model against
 * a real nginx (tests/it/real_nginx.rs): LD_PRELOAD it into nginx.
 *
 * nginx's limit_req measures time with ngx_current_msec, which
 * ngx_time_update (src/core/ngx_times.c) takes from
 * clock_gettime(CLOCK_MONOTONIC) in whole milliseconds, right after it
 * reads the wall clock with gettimeofday for $msec. The two millisecond
 * grids are out of phase, so replaying $msec differs from nginx on
 * requests whose excess sits within one millisecond step of the burst.
 * This shim makes clock_gettime(CLOCK_MONOTONIC) return the last
 * gettimeofday sample: nginx's limit_req clock is then the $msec it logs.
 *
 * Built by the test: cc -shared -fPIC -o clock_shim.so clock_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

static struct timeval last;
static int have_last;

typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

int gettimeofday(struct timeval *tv, void *tz) {
    static gettimeofday_fn real;
    if (!real) {
        real = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
    }
    int r = real(tv, tz);
    if (r == 0 && tv) {
        last = *tv;
        have_last = 1;
    }
    return r;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    static clock_gettime_fn real;
    if (!real) {
        real = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    }
    if (id == CLOCK_MONOTONIC && have_last && ts) {
        ts->tv_sec = last.tv_sec;
        ts->tv_nsec = (long)last.tv_usec * 1000;
        return 0;
    }
    return real(id, ts);
}
