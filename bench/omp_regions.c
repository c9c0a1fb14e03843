/* Wall time per OpenMP parallel region, for bench/omp_regions.sh: an LD_PRELOAD library that
 * wraps libgomp's GOMP_parallel (what `#pragma omp parallel` compiles to with GCC) and sums, per
 * outlined function, the calls and the wall time from fork to join as the calling thread sees
 * it: the work of the slowest thread plus the waits at the barrier. Top-level regions only (a
 * region opened inside another one, by any of its threads, is part of its time; meshlm opens
 * top-level regions from one thread only). Perf samples say which code ran; this
 * says how long the step waited for each region, and how much of it ran outside any region.
 *
 * SIGUSR1 restarts the count, SIGUSR2 writes the table to $OMP_REGIONS_OUT (the handlers only set
 * flags: the work happens at the next region's start). One line per region:
 *   calls seconds module offset          (offset: of the function within its module, hex)
 * and a last line `window SECONDS outside SECONDS`: the wall time between the restart and the
 * dump and the part of it spent outside any top-level region. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*gomp_parallel_fn)(void (*)(void*), void*, unsigned, unsigned);

enum { kMaxRegions = 512 };
static struct {
    void* fn;
    long calls;
    double seconds;
} regions[kMaxRegions];
static int n_regions;
static double window_start, inside;
static volatile sig_atomic_t want_reset, want_dump;
static int active; /* a top-level region is running: nested ones, on any thread, pass through */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void on_signal(int sig) {
    if (sig == SIGUSR1) want_reset = 1;
    if (sig == SIGUSR2) want_dump = 1;
}

__attribute__((constructor)) static void start(void) {
    signal(SIGUSR1, on_signal);
    signal(SIGUSR2, on_signal);
    window_start = now();
}

static void dump(double t) {
    const char* path = getenv("OMP_REGIONS_OUT");
    FILE* f = path ? fopen(path, "w") : stderr;
    if (!f) return;
    for (int i = 0; i < n_regions; ++i) {
        Dl_info info;
        const char* module = "?";
        unsigned long offset = (unsigned long)regions[i].fn;
        if (dladdr(regions[i].fn, &info) && info.dli_fname) {
            module = info.dli_fname;
            offset = (unsigned long)((char*)regions[i].fn - (char*)info.dli_fbase);
        }
        fprintf(f, "%ld %.6f %s 0x%lx\n", regions[i].calls, regions[i].seconds, module, offset);
    }
    fprintf(f, "window %.6f outside %.6f\n", t - window_start, t - window_start - inside);
    if (f != stderr) fclose(f);
}

void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
    static gomp_parallel_fn real;
    if (!real) real = (gomp_parallel_fn)dlsym(RTLD_NEXT, "GOMP_parallel");
    if (__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return real(fn, data, num_threads, flags);
    double t0 = now();
    if (want_dump) {
        want_dump = 0;
        dump(t0);
    }
    if (want_reset) {
        want_reset = 0;
        n_regions = 0;
        inside = 0;
        window_start = t0;
    }
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
    real(fn, data, num_threads, flags);
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
    const double dt = now() - t0;
    inside += dt;
    int i = 0;
    while (i < n_regions && regions[i].fn != (void*)fn) ++i;
    if (i == n_regions && n_regions < kMaxRegions) {
        regions[i].fn = (void*)fn;
        regions[i].calls = 0;
        regions[i].seconds = 0;
        ++n_regions;
    }
    if (i < kMaxRegions) {
        ++regions[i].calls;
        regions[i].seconds += dt;
    }
}
