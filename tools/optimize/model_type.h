// What kind of transformer a graph is, read from what it computes: its attention (causal or
// bidirectional, self or cross), its norms (with or without the mean), and its input (token ids,
// image patches, audio frames). The result is named as ONNX Runtime's transformer optimizer
// names model types (bert, vit, clip, t5, bart, whisper, gpt2, llama), with the reason, so
// `optimize` can say what it found and warn when a given --model-type does not fit.
#pragma once

#include <string>

#include "graph_index.h"

namespace refeval::optimize {

struct ModelKind {
  std::string type;    // "" when nothing tells
  std::string family;  // "encoder", "decoder", "encoder-decoder", "vision"
  std::string reason;  // "bidirectional attention in 4 layers, key padding from 'attention_mask'"
};

ModelKind detect_model_kind(const GraphIndex& g);

// Every --model-type this optimizer accepts, and the family each belongs to.
const std::vector<std::pair<std::string, std::string>>& model_types();

// The warning for a --model-type that does not fit what the graph shows; empty when it fits or
// nothing was found.
std::string type_mismatch(const std::string& given, const ModelKind& found);

}  // namespace refeval::optimize
