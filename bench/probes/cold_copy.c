/* The floor of a seed 002 row's copies: 4 KB (or CHUNK bytes) copied from a cached source into
 * memory that is mapped and touched once (as the buffer pool's is under TF 834) but not cached,
 * one chunk after another, as each row's record goes into a fresh frame and into the log.
 *
 *   cc -O2 -o cold_copy bench/probes/cold_copy.c && taskset -c 0 ./cold_copy 4096 4096
 *
 * Arguments: megabytes to fill, chunk bytes (at most 65536). Prints GB/s and ns per 4 KB. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: cold_copy MEGABYTES CHUNK_BYTES\n");
        return 2;
    }
    size_t total = (size_t)atol(argv[1]) << 20;
    size_t chunk = (size_t)atol(argv[2]);
    static char src[65536];
    if (chunk == 0 || chunk > sizeof src) {
        fprintf(stderr, "chunk must be 1 to 65536 bytes\n");
        return 2;
    }
    char *dst = mmap(0, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (dst == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(dst, total, MADV_HUGEPAGE);
    for (size_t i = 0; i < total; i += 4096)
        dst[i] = 1; /* mapped now: the copies below pay for cache misses, not page faults */
    memset(src, 'x', sizeof src);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t off = 0; off + chunk <= total; off += chunk)
        memcpy(dst + off, src, chunk);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double s = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("%zu MB in %.3f s = %.2f GB/s, %.1f ns per 4 KB (check byte %d)\n", total >> 20, s,
           total / s / 1e9, s / (total / 4096.0) * 1e9, dst[total / 2]);
    return 0;
}
