// What `refeval debug` prints: node lines, stop headers and values in a person's format.
#pragma once

#include <string>

#include "refeval/debugger.h"

namespace refeval::cli {

enum class ValueDetail { Summary, Full, Stats };

// "#3 /h.0/attn/MatMul (MatMul)  inputs: X, W  outputs: Y": the stored index (#I addresses it),
// the qualified id unless the index already says it all, the op type, the value names.
std::string node_line(const Node& node, const std::string& id, const Debugger& dbg);
// Why the run stopped and where: "Breakpoint 1, before #1 root (Sqrt) ...", plus the body it is in.
std::string stop_header(const Stop& stop, const Debugger& dbg);
// One line: describe() at level 3, with words for what it prints as nothing (an empty sequence).
std::string value_summary(const Value& v);
// "NAME: float32:(2, 3) in [-1.0, 2.0]" and then the first values, every value, or statistics.
std::string value_text(const std::string& name, const Value& v, ValueDetail detail);

}  // namespace refeval::cli
