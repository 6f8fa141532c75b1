// Shared by the ai.onnx.ml tests: building an ai.onnx.ml node and maps.
#pragma once

#include "test_util.h"

namespace refeval::testing {

inline Node ml_node(const char* op, std::vector<std::string> in, std::vector<std::string> out,
                    std::vector<Attribute> attrs = {}) {
  return build::node(op, std::move(in), std::move(out), std::move(attrs), "", "ai.onnx.ml");
}

template <class K, class V>
Map make_map(std::vector<K> keys, std::vector<V> values) {
  const int64_t n = int64_t(keys.size());
  return Map{Tensor::from_vector<K>({n}, keys), Tensor::from_vector<V>({int64_t(values.size())}, values)};
}

}  // namespace refeval::testing
