// `refeval quantize --float16`: a float32 model in float16, as ONNX Runtime's transformers tool
// (float16.py's convert_float_to_float16) writes it:
//   - every float initializer a converted node reads (one only blocked nodes read stays float),
//     Constant and ConstantOfShape value in float16, each value clamped to [5.96e-08, 65504] in
//     magnitude (0, NaN and infinities kept);
//   - in converted nodes, Cast(to float) retargeted to float16, and the random ops' and EyeLike's
//     dtype;
//   - a blocked node (its op type in the block list, its name in the node list, or an output that
//     overflows float16 on the calibration inputs) keeps float: a Cast to float before each of its
//     float16 inputs ({node}_input_cast{i}) and a Cast to float16 after each float output
//     ({node}_output_cast{i});
//   - with keep_io_types, graph inputs and outputs stay float, a Cast after each input
//     (graph_input_cast{i}) and before each output (graph_output_cast{i}).
// Which values are float comes from a run of the float model (`value_types`); the main graph only:
// a model with If, Loop or Scan bodies is refused.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "refeval/evaluator.h"
#include "refeval/ir.h"

namespace refeval::quantize {

// ORT's DEFAULT_OP_BLOCK_LIST plus Resize (onnxconverter-common's; its scales input is float only).
const std::set<std::string>& default_float16_block_list();

struct Float16Options {
  bool keep_io_types = false;
  std::set<std::string> op_block = default_float16_block_list();
  std::set<std::string> node_block;  // node names
};

struct Float16Result {
  Model model;
  int64_t converted_nodes = 0;
  std::vector<std::pair<std::string, std::string>> blocked;  // (node, why) kept in float
  int64_t converted_tensors = 0, clamped_values = 0;
};

// value_types: the element type of every value of a run; overflow: node name -> why, for the
// nodes an output of which left float16's range on the calibration inputs.
// The element type of every value of the float model over the input sets, and the nodes kept in
// float because a value they make or read leaves float16's range there (65504 < |v| < 1e30), with
// the reason (float16.cc): what convert_float16 takes.
std::pair<std::map<std::string, DType>, std::map<std::string, std::string>> calibrate_float16(
    ReferenceEvaluator& ev, const std::vector<std::map<std::string, Value>>& sets);

Float16Result convert_float16(const Model& model, const Float16Options& options, const std::map<std::string, DType>& value_types,
                              const std::map<std::string, std::string>& overflow);

}  // namespace refeval::quantize
