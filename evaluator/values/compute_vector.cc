#include "refeval/compute_vector.h"

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval {

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& target, std::string_view name) {
  auto fail = [&] {
    fail_runtime(fmt::format("{} of shape {} does not broadcast to {}", name, shape_to_string(shape), shape_to_string(target)));
  };
  if (shape.size() > target.size()) fail();
  std::vector<int64_t> strides(target.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {  // k counts dimensions from the right
    const int64_t dim = shape[shape.size() - 1 - k];
    if (dim != 1 && dim != target[target.size() - 1 - k]) fail();
    strides[target.size() - 1 - k] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}

}  // namespace refeval
