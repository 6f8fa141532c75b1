// The instruction sets refeval's hand-written kernels choose among at run time, as ONNX Runtime's
// MLAS does: the best one both this CPU and this build have (a build for an AVX-512 host holds the
// AVX-512, AVX2+FMA and portable paths), unless `--isa` or REFEVAL_ISA asks for a lower one, so
// that every path runs and is tested on one machine.
//
// What follows it: the float GEMM (MatMul, Gemm, Conv: AVX-512 few-row and panel kernels, AVX2
// tiles, portable loops; MatMul and Gemm take the AVX2 tiles on a half-width AVX-512 CPU unless
// the path was forced), MatMulNBits (AVX-512 and AVX2 register and float tiles, portable chains;
// its int8 path's 4-bit tiles on AVX-512 VNNI or AVX2 integer dot products), the vector
// math of elementwise ops (glibc's 16- and 8-lane functions, or libm one value at a time), TopK's
// block test and the strided copies of convolutions. The recurrent cells' vectors, MatMulInteger's
// int16 tiles and float16 casts keep the build's widest form (the same bits on every path).
//
// Which outputs differ: no product (each output of MatMul, Gemm and Conv is one chain of fused
// multiply-adds over k in order on every path, below 32K multiply-adds all paths use Eigen; each
// of MatMulNBits is 32 chains summed in one fixed order, matmul_nbits_kernel.h; its int8 path
// exact integer block sums, then one chain over the blocks), no integer kernel, TopK, Erf or Sqrt, and Exp not between AVX-512 and AVX2 (glibc's
// 16-lane expf gives the 8-lane one's bits for every float). The portable path's scalar libm
// differs from glibc's vector functions by at most 2 ulps (Tanh, Sin, Cos), 3 (Exp, Softplus) or
// 4 (Log, Sigmoid), measured over 2^20 floats in [-20, 20] and (0, 5].
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace refeval {

enum class Isa { Generic = 0, Avx2 = 1, Avx512 = 2 };

// The path kernels take now.
Isa active_isa();
// The best path this CPU and this build both support.
Isa best_isa();
// Every path this machine can run, from Generic up to best_isa().
std::vector<Isa> runnable_isas();
// Forces a path (nullopt: back to the best); a path above best_isa() is a usage error naming both.
void force_isa(std::optional<Isa> isa);
// Whether --isa, REFEVAL_ISA or force_isa chose the path (rather than the CPU).
bool isa_forced();
// Whether this CPU runs 512-bit arithmetic as two 256-bit halves (AMD's Zen 4): AVX-512 then
// brings no more multiply-adds per cycle than AVX2, and kernels may prefer their AVX2 form.
bool half_width_avx512();

const char* isa_name(Isa isa);  // "avx512", "avx2", "generic"
// "avx512" / "avx2" / "generic"; a usage error naming the choices otherwise.
Isa parse_isa(const std::string& name);

}  // namespace refeval
