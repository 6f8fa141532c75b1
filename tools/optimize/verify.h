// `optimize --verify`: the optimized model against the original on the same input sets (the
// given or generated feeds, then check-fusion's random and edge-case variants of every floating
// input), graph outputs compared with the check-fusion tolerances.
#pragma once

#include <map>
#include <string>

#include "equivalence.h"
#include "refeval/registry.h"

namespace refeval::optimize {

fusion::FusionReport verify(const Model& original, const Model& optimized, const Registry& registry,
                            const std::map<std::string, Value>& feeds, const fusion::CheckOptions& options);

}  // namespace refeval::optimize
