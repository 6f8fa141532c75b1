#include "refeval/isa.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval {
namespace {

Isa compiled_best() {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  return Isa::Avx512;
#elif defined(__AVX2__) && defined(__FMA__)
  return Isa::Avx2;
#else
  return Isa::Generic;
#endif
}

Isa cpu_best() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return Isa::Avx512;
  // F16C widens float16 weights in the AVX2 tiles; every CPU with AVX2 and FMA has it. Read from CPUID
  // (leaf 1, ECX) because clang's __builtin_cpu_supports has no "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return Isa::Avx2;
#endif
  return Isa::Generic;
}

std::atomic<bool> g_forced{false};

// REFEVAL_ISA, read once, before any kernel asks.
Isa initial() {
  const Isa best = best_isa();
  const char* env = std::getenv("REFEVAL_ISA");
  if (!env || !*env) return best;
  g_forced = true;
  const Isa wanted = parse_isa(env);
  if (int(wanted) > int(best))
    fail_usage(fmt::format("REFEVAL_ISA={}: this machine and build run at most {}", env, isa_name(best)));
  return wanted;
}

std::atomic<int>& current() {
  static std::atomic<int> isa{int(initial())};
  return isa;
}

}  // namespace

Isa best_isa() {
  static const Isa best = Isa(std::min(int(compiled_best()), int(cpu_best())));
  return best;
}

Isa active_isa() { return Isa(current().load(std::memory_order_relaxed)); }

std::vector<Isa> runnable_isas() {
  std::vector<Isa> all;
  for (int i = 0; i <= int(best_isa()); ++i) all.push_back(Isa(i));
  return all;
}

void force_isa(std::optional<Isa> isa) {
  const Isa want = isa.value_or(best_isa());
  if (int(want) > int(best_isa()))
    fail_usage(fmt::format("--isa {}: this machine and build run at most {}", isa_name(want), isa_name(best_isa())));
  current().store(int(want), std::memory_order_relaxed);
  g_forced = isa.has_value();
}

bool isa_forced() {
  current();  // REFEVAL_ISA read
  return g_forced.load(std::memory_order_relaxed);
}

bool half_width_avx512() {
  static const bool half = [] {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (best_isa() != Isa::Avx512 || !__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
    char vendor[12];
    std::memcpy(vendor, &ebx, 4), std::memcpy(vendor + 4, &edx, 4), std::memcpy(vendor + 8, &ecx, 4);
    if (std::memcmp(vendor, "AuthenticAMD", 12) != 0 || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const unsigned family = ((eax >> 8) & 0xF) + ((eax >> 20) & 0xFF);
    return family == 0x19;  // Zen 3 and 4; only Zen 4 has AVX-512. Zen 5 (0x1A) runs it full width.
#else
    return false;
#endif
  }();
  return half;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "generic";
  }
}

Isa parse_isa(const std::string& name) {
  for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Generic})
    if (name == isa_name(isa)) return isa;
  fail_usage(fmt::format("'{}' is not an instruction set: avx512, avx2 or generic", name));
}

}  // namespace refeval
