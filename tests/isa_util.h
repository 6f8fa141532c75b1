// Kernel tests run once per instruction set (refeval/isa.h).
#pragma once

#include <string>

#include <doctest/doctest.h>

#include "refeval/isa.h"

namespace refeval::testing {

// Runs `body(isa)` once under each instruction set this machine runs (refeval/isa.h), so that an
// AVX-512 machine also runs the AVX2 and portable paths; a path it cannot run is named in the
// output instead of passing unseen. The best path is restored afterwards, even on failure.
template <class F>
void for_each_isa(F&& body) {
  struct Restore {
    ~Restore() { force_isa(std::nullopt); }
  } restore;
  for (int i = int(best_isa()) + 1; i <= int(Isa::Avx512); ++i)
    MESSAGE("the ", std::string(isa_name(Isa(i))), " path is not run: this CPU or build does not have it");
  for (Isa isa : runnable_isas()) {
    force_isa(isa);
    INFO("instruction set: ", std::string(isa_name(isa)));
    body(isa);
  }
}

}  // namespace refeval::testing
