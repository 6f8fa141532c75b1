// Raising a model's ai.onnx opset (ONNX's version converter, for the changes real exports meet).
// Every default-domain node, in the main graph and in If/Loop/Scan bodies, whose registration in
// `registry` changes between the model's opset and the target is either a pure extension (new
// element types or new optional inputs/attributes whose defaults keep the old meaning; the list
// in opset_convert.cc, checked against ONNX's Changelog.md) or rewritten by an adapter:
//   Reduce* (not ReduceSum, an input since 13) crossing 18: the axes attribute becomes an int64
//     input; noop_with_empty_axes stays unset (0), so a missing axes still reduces everything;
//   Split crossing 18: without a split input, num_outputs = the number of outputs (Split-13
//     required an even split, which num_outputs gives);
//   GridSample crossing 20: mode "bilinear" / "bicubic" are renamed "linear" / "cubic";
//   RoiAlign crossing 16: the old behaviour, coordinate_transformation_mode "output_half_pixel",
//     is written out (16's default is "half_pixel");
//   BatchNormalization crossing 14: inference form only (one output).
// Anything else fails with ErrorKind::Usage naming the node, e.g.
//   cannot raise node 'g' (GroupNormalization) from opset 18 to 23: ...
// Model-local functions keep their own opset imports and are not converted.
#pragma once

#include <cstdint>

#include "refeval/ir.h"
#include "refeval/registry.h"

namespace refeval::optimize {

// Raises m's ai.onnx opset (at least 13) to `to` (>= the model's) and sets m.opsets[""] = to.
void convert_opset(Model& m, const Registry& registry, int64_t to);

}  // namespace refeval::optimize
