// Reverse-mode derivative rules for Gradient: per operator, the gradients of its inputs given the
// gradient of its output. Values are held as double arrays; a gradient that reaches a broadcast
// input is summed back to that input's shape.
#pragma once

#include <string>
#include <vector>

#include "refeval/tensor.h"

namespace refeval::ops {

struct Dense {
  Shape shape;
  std::vector<double> v;
};

Dense to_dense(const Tensor& t);
Tensor from_dense(const Dense& d, DType dtype);

// True when `op_type` (domain "") has a rule.
bool has_gradient_rule(const std::string& op_type);

// Gradients of each input of one node (empty Dense: no gradient flows to that input) from the
// node's input values, its output value and the gradient of that output.
std::vector<Dense> input_gradients(const std::string& op_type, const std::vector<Dense>& inputs, const Dense& output,
                                   const Dense& output_grad);

}  // namespace refeval::ops
