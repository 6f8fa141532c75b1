// The machine's read bandwidth for benchmarks/gemv/sweep.sh: sums a 1 GiB float32 array on THREADS
// OpenMP threads (static split; each thread first touches the part it reads), best of 3 passes,
// and prints GB/s (1e9 bytes). The array is on transparent huge pages where the kernel offers them
// on madvise, as refeval's large tensors are. Usage: read_bandwidth [THREADS] (default 1).
// Build: cc -O3 -march=native -fopenmp read_bandwidth.c -o read_bandwidth
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

enum { W = 32 };  // independent sums per thread: four AVX2 vectors, not bound by the add's latency

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  size_t n = (size_t)1 << 28;  // 1 GiB of float
  float *a = aligned_alloc(1 << 21, n * sizeof *a);
  if (!a) return 1;
  madvise(a, n * sizeof *a, MADV_HUGEPAGE);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t b = 0; b < n / W; ++b)
    for (int j = 0; j < W; ++j) a[b * W + j] = (float)(j & 1);  // each sum stays exact in float
  double best = 1e30, total = 0;
  for (int pass = 0; pass < 3; ++pass) {
    double t = omp_get_wtime(), sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
    {
      float acc[W] = {0};
#pragma omp for schedule(static)
      for (size_t b = 0; b < n / W; ++b)
        for (int j = 0; j < W; ++j) acc[j] += a[b * W + j];
      for (int j = 0; j < W; ++j) sum += acc[j];
    }
    t = omp_get_wtime() - t;
    if (t < best) best = t;
    total += sum;
  }
  if (total != 1.5 * (double)n) fprintf(stderr, "read_bandwidth: wrong sum %.0f\n", total);
  printf("%.1f\n", n * sizeof *a / best / 1e9);
  free(a);
  return 0;
}
