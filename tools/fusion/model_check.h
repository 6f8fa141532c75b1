// check-fusion, model form: a fused model against its unfused original. Every graph output and
// every other value name the two models share is compared, on the same input sets.
#pragma once

#include <map>
#include <string>

#include "equivalence.h"
#include "refeval/registry.h"

namespace refeval::fusion {

// `feeds` must cover the inputs of both models (names they share get the same value). Usage
// error when the models share no value name.
FusionReport check_models(const Model& fused, const Model& unfused, const Registry& registry,
                          const std::map<std::string, Value>& feeds, const CheckOptions& options);

}  // namespace refeval::fusion
