// The FFT behind DFT and STFT, in double precision. Powers of two use the iterative radix-2
// Cooley-Tukey algorithm; other lengths use Bluestein's identity jk = (j^2 + k^2 - (k-j)^2) / 2,
// which turns the DFT into a convolution computed with power-of-two FFTs.
#include <numbers>

#include "signal_common.h"

namespace refeval::ops {
namespace {

bool is_power_of_two(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

void radix2(std::vector<cdouble>& a, bool inverse) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const size_t half = len / 2;
    // Twiddles computed directly (not by repeated multiplication) to keep full precision.
    std::vector<cdouble> w(half);
    for (size_t k = 0; k < half; ++k) {
      const double angle = (inverse ? 2 : -2) * std::numbers::pi * double(k) / double(len);
      w[k] = {std::cos(angle), std::sin(angle)};
    }
    for (size_t i = 0; i < n; i += len)
      for (size_t k = 0; k < half; ++k) {
        const cdouble u = a[i + k], v = a[i + k + half] * w[k];
        a[i + k] = u + v;
        a[i + k + half] = u - v;
      }
  }
}

void bluestein(std::vector<cdouble>& a, bool inverse) {
  const size_t n = a.size();
  size_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  // chirp[k] = exp(-+ i pi k^2 / n), with k^2 reduced mod 2n so the angle stays small.
  std::vector<cdouble> chirp(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t k2 = size_t((unsigned __int128)(k) * k % (2 * n));
    const double angle = (inverse ? 1 : -1) * std::numbers::pi * double(k2) / double(n);
    chirp[k] = {std::cos(angle), std::sin(angle)};
  }
  std::vector<cdouble> x(m), y(m);
  for (size_t k = 0; k < n; ++k) x[k] = a[k] * chirp[k];
  y[0] = std::conj(chirp[0]);
  for (size_t k = 1; k < n; ++k) y[k] = y[m - k] = std::conj(chirp[k]);
  radix2(x, false);
  radix2(y, false);
  for (size_t i = 0; i < m; ++i) x[i] *= y[i];
  radix2(x, true);
  for (size_t k = 0; k < n; ++k) a[k] = x[k] / double(m) * chirp[k];
}

}  // namespace

void fft(std::vector<cdouble>& a, bool inverse) {
  if (a.size() <= 1) return;
  if (is_power_of_two(a.size())) radix2(a, inverse);
  else bluestein(a, inverse);
}

}  // namespace refeval::ops
