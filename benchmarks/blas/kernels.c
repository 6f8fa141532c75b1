// OpenBLAS's single-thread sgemm on GPT-2 small's products (32 tokens and 128), best of R runs,
// for the kernel set named by OPENBLAS_CORETYPE (run by kernels.sh once per set), and whether
// equal rows of A give equal rows of C (refeval needs that: its results must not depend on
// where a value sits in a product or on the thread count).
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

char* openblas_get_corename(void);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  // M x K times K x N: attention in-projection, MLP up and down, attention out-projection, LM head.
  const int shapes[][3] = {{32, 768, 2304}, {32, 768, 3072}, {32, 3072, 768}, {32, 768, 768}, {32, 768, 50257}, {128, 768, 3072}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
    const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
    float* a = malloc(sizeof(float) * M * K);
    float* b = malloc(sizeof(float) * K * N);
    float* c = malloc(sizeof(float) * M * N);
    for (long i = 0; i < (long)M * K; ++i) a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)K * N; ++i) b[i] = (float)(i % 5) * 0.1f;
    const int runs = N > 10000 ? 5 : 50;
    double best = 1e9;
    for (int r = 0; r < runs; ++r) {
      const double t = now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, a, K, b, N, 0.f, c, N);
      if (now() - t < best) best = now() - t;
    }
    for (long k = 0; k < K; ++k) a[(long)(M - 1) * K + k] = a[k];  // last row = first row
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, a, K, b, N, 0.f, c, N);
    int equal = 1;
    for (long j = 0; j < N; ++j) equal &= c[(long)(M - 1) * N + j] == c[j];
    printf("%-10s %4d x %4d x %5d %8.3f ms %6.1f GFLOP/s  equal rows: %s\n", openblas_get_corename(), M, K, N,
           best * 1e3, 2.0 * M * N * K / best * 1e-9, equal ? "equal" : "DIFFER");
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
