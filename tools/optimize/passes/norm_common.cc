#include "norm_common.h"

#include <fmt/format.h>

namespace refeval::optimize {

std::string node_label(const Node& n) { return fmt::format("'{}'", n.name.empty() ? n.outputs.at(0) : n.name); }

std::string last_axis_mean_problem(const Node& n, const GraphIndex& g) {
  if (int_attr(n, "keepdims", 1) != 1) return fmt::format("ReduceMean {} does not keep the reduced axis", node_label(n));
  std::vector<int64_t> axes = ints_attr(n, "axes");
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const auto given = g.ints(n.inputs[1]);
    if (!given) return fmt::format("the axes of ReduceMean {} ('{}') are not a constant", node_label(n), n.inputs[1]);
    axes = *given;
  }
  if (axes.empty()) return fmt::format("ReduceMean {} reduces every axis, not the last axis", node_label(n));
  if (axes.size() != 1) return fmt::format("ReduceMean {} reduces axes [{}], not the last axis alone", node_label(n), fmt::join(axes, ", "));
  if (axes[0] == -1) return "";
  const std::vector<Dim>* dims = g.dims(n.inputs[0]);
  if (!dims) return fmt::format("ReduceMean {} reduces axis {} of '{}', whose rank is unknown", node_label(n), axes[0], n.inputs[0]);
  const int64_t rank = int64_t(dims->size());
  if (axes[0] == rank - 1) return "";
  return fmt::format("ReduceMean {} reduces axis {}, not the last axis", node_label(n), axes[0] < 0 ? axes[0] + rank : axes[0]);
}

std::optional<float> norm_epsilon(const std::string& value, const GraphIndex& g, std::string& problem) {
  const auto eps = g.scalar(value);
  if (!eps) {
    problem = fmt::format("epsilon '{}' is not a scalar constant", value);
    return std::nullopt;
  }
  if (!(*eps > 0) || *eps > 1e-2) {
    problem = fmt::format("epsilon {:g} is not in (0, 0.01]", *eps);
    return std::nullopt;
  }
  return float(*eps);
}

std::string channel_vector_problem(const std::string& role, const std::string& value, const std::string& x, const GraphIndex& g) {
  const Tensor* t = g.constant(value);
  if (!t) return fmt::format("{} '{}' is not a constant", role, value);
  const std::vector<Dim>* dims = g.dims(x);
  if (!dims || dims->empty() || !dims->back().fixed()) return fmt::format("the last dim of '{}' is not known", x);
  const int64_t h = dims->back().value;
  if (t->rank() != 1 || t->dim(0) != h)
    return fmt::format("{} '{}' has shape {}, not ({},) (the last dim of '{}')", role, value, shape_to_string(t->shape()), h, x);
  const ValueType* tx = g.type(x);
  if (tx && tx->dtype != t->dtype())
    return fmt::format("{} '{}' is {}, '{}' {}: the fused operator takes one type", role, value, dtype_short_name(t->dtype()), x,
                       dtype_short_name(tx->dtype));
  return "";
}

std::string norm_types_problem(const std::string& x, const Node* cast_in, const std::string& y, const GraphIndex& g) {
  const ValueType *tx = g.type(x), *ty = g.type(y);
  if (!tx || !ty) return fmt::format("the element type of '{}' is not known", tx ? y : x);
  const DType dx = tx->dtype;
  if (dx != DType::Float && dx != DType::Float16 && dx != DType::BFloat16 && dx != DType::Double)
    return fmt::format("'{}' is {}, not a float type", x, dtype_short_name(dx));
  if (ty->dtype != dx) return fmt::format("the result '{}' is {}, the input '{}' {}", y, dtype_short_name(ty->dtype), x, dtype_short_name(dx));
  if (cast_in) {
    const DType to = DType(int_attr(*cast_in, "to", 0));
    const DType compute = dx == DType::Double ? DType::Double : DType::Float;
    if (to != compute)
      return fmt::format("Cast {} turns {} '{}' into {}, not into the fused operator's compute type {}", node_label(*cast_in),
                         dtype_short_name(dx), x, dtype_short_name(to), dtype_short_name(compute));
  }
  return "";
}

}  // namespace refeval::optimize
