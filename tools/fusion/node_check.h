// check-fusion, node form: a node's kernel against its decomposition, which is the model-local
// function of the same (domain, op type) when the model has one, else refeval's built-in
// decomposition (decompositions/). The node's inputs come from running the model up to it.
#pragma once

#include <map>
#include <string>

#include "equivalence.h"
#include "refeval/address.h"
#include "refeval/registry.h"

namespace refeval::fusion {

// `model_feeds` feed the model's inputs; the node's inputs are computed from them. Usage error
// when the node has no kernel in `registry`, no decomposition, or lives inside a body.
FusionReport check_node(const Model& model, const NodeMatch& match, const Registry& registry,
                        const std::map<std::string, Value>& model_feeds, const CheckOptions& options);

}  // namespace refeval::fusion
