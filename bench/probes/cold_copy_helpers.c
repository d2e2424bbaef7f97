/* Can anything make a seed 002 row's copy into a fresh frame cheaper? Each "row" copies 4,107
 * bytes (the record) 96 bytes into its own 8 KB frame of memory that is mapped and touched once
 * but not cached, one frame after another, as `bench seed002` does. The ways tried:
 *
 *   0  memcpy (glibc; 64-byte vector stores at this size)
 *   1  `rep movsb` (fast strings, which may write whole lines without reading them first)
 *   2  non-temporal 32-byte stores (no read for ownership; the lines go to memory)
 *   3  memcpy, while a second thread on CPU 1 loads one byte of each line AHEAD_KB ahead of
 *      the copies (the idle CPU of the seed 002 run warming the next frames)
 *   4  memcpy, each row first prefetching the next frame's lines into level 2, as the engine
 *      does (`prefetch_new_page` in crates/engine/src/buffer.rs)
 *   5  ways 4 and 3 together
 *
 *   cc -O2 -mavx2 -pthread -o cold_copy_helpers bench/probes/cold_copy_helpers.c
 *   for m in 0 1 2 3 4 5; do taskset -c 0,1 ./cold_copy_helpers 4096 $m 512; done
 *
 * Arguments: megabytes of frames, way (0-5), AHEAD_KB (ways 3 and 5). The copying thread is
 * bound to CPU 0, the helper to CPU 1. Prints ns per row. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { FRAME = 8192, HEADER = 96, RECORD = 4107 };

static char *frames;
static size_t total_bytes, ahead_bytes;
static int way;
static _Atomic size_t copied_to;
static _Atomic int done;

static void bind_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void copy_rep_movsb(void *dst, const void *src, size_t n) {
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static void copy_non_temporal(char *dst, const char *src, size_t n) {
    size_t i = 0;
    /* The record starts 96 bytes into its frame: 32-byte aligned, as streaming stores need. */
    for (; i + 32 <= n; i += 32)
        _mm256_stream_si256((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i)));
    memcpy(dst + i, src + i, n - i);
    _mm_sfence();
}

/* Ways 3 and 5: load the lines of the records ahead of the copying thread. */
static void *helper(void *unused) {
    (void)unused;
    bind_to(1);
    volatile char sink = 0;
    size_t at = 0;
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        size_t copied = atomic_load_explicit(&copied_to, memory_order_relaxed);
        if (at < copied)
            at = copied;
        size_t limit = copied + ahead_bytes < total_bytes ? copied + ahead_bytes : total_bytes;
        for (; at < limit; at += 64) {
            size_t in_frame = at % FRAME;
            if (in_frame >= HEADER + RECORD) {
                at = at - in_frame + FRAME - 64; /* on to the next frame's first line */
                continue;
            }
            sink += frames[at];
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: cold_copy_helpers MEGABYTES WAY AHEAD_KB\n");
        return 2;
    }
    total_bytes = (size_t)atol(argv[1]) << 20;
    way = atoi(argv[2]);
    ahead_bytes = (size_t)atol(argv[3]) << 10;
    static char record[FRAME] __attribute__((aligned(64)));
    memset(record, 'x', sizeof record);
    frames = mmap(0, total_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (frames == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(frames, total_bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < total_bytes; i += 4096)
        frames[i] = 1; /* mapped now: the copies pay for cache misses, not page faults */
    bind_to(0);
    pthread_t thread;
    if (way == 3 || way == 5)
        pthread_create(&thread, NULL, helper, NULL);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t off = 0; off + FRAME <= total_bytes; off += FRAME) {
        char *dst = frames + off + HEADER;
        if (way >= 4 && off + 2 * FRAME <= total_bytes)
            for (size_t line = 0; line < HEADER + RECORD; line += 64)
                __builtin_prefetch(frames + off + FRAME + line, 0, 2);
        if (way == 1)
            copy_rep_movsb(dst, record, RECORD);
        else if (way == 2)
            copy_non_temporal(dst, record, RECORD);
        else
            memcpy(dst, record, RECORD);
        atomic_store_explicit(&copied_to, off + FRAME, memory_order_relaxed);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    atomic_store(&done, 1);
    if (way == 3 || way == 5)
        pthread_join(thread, NULL);
    double s = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("way %d: %.1f ns per row (check byte %d)\n", way, s / (total_bytes / (double)FRAME) * 1e9,
           frames[total_bytes / 2]);
    return 0;
}
