/* How long a cache line takes to go from CPU 0 to CPU 1 and back: two threads bound to the two
 * CPUs pass one 64-byte line back and forth 200,000 times. `bench insert` measures the same
 * before and after its load (crates/cli/src/insert_baseline.rs); this program samples it over
 * time, to see how long this VM's slow episodes last.
 *
 *   cc -O2 -pthread -o cpu_round_trip bench/probes/cpu_round_trip.c
 *   for i in $(seq 60); do ./cpu_round_trip; sleep 1; done
 *
 * Prints ns per round trip. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { ROUND_TRIPS = 200000 };
static _Atomic int line __attribute__((aligned(64)));

static void bind_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *answer(void *unused) {
    (void)unused;
    bind_to(1);
    for (int i = 0; i < ROUND_TRIPS; i++) {
        while (atomic_load_explicit(&line, memory_order_acquire) != 1) {
        }
        atomic_store_explicit(&line, 0, memory_order_release);
    }
    return NULL;
}

int main(void) {
    pthread_t answerer;
    bind_to(0);
    pthread_create(&answerer, NULL, answer, NULL);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < ROUND_TRIPS; i++) {
        atomic_store_explicit(&line, 1, memory_order_release);
        while (atomic_load_explicit(&line, memory_order_acquire) != 0) {
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    pthread_join(answerer, NULL);
    double ns = (end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec);
    printf("%.1f ns per round trip\n", ns / ROUND_TRIPS);
    return 0;
}
