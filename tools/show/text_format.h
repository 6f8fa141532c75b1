// A model in ONNX's textual syntax (onnx/docs/Syntax.md, as ONNX 1.23 reads it): the model's
// `< ... >` header, the graph's signature, initializers in its `< ... >` list, one line per node,
// bodies nested, then model-local functions. Names that are not plain identifiers
// ([A-Za-z_][A-Za-z0-9_]*, torch's "/h.0/attn/MatMul", "onnx::Add_12") are quoted. Node names
// are `# name` comments, or with `labels` ONNX 1.16+'s `[name]` labels; large initializers are
// a comment summary unless `full`. With plain names and no labels the text also parses with
// Debian's libonnx 1.12 parser, to the same graph.
#pragma once

#include <string>

#include "refeval/ir.h"

namespace refeval::show {

struct TextOptions {
  bool full = false;            // print every initializer's values
  bool labels = false;          // node names as [name] labels (ONNX >= 1.16 parsers)
  int64_t max_elements = 16;    // initializers larger than this are summarised unless full
};

std::string model_text(const Model& m, const TextOptions& options = {});

// "x" -> x, "/h.0/attn" -> "\"/h.0/attn\"".
std::string quote_id(const std::string& name);

}  // namespace refeval::show
