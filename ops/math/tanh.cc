// Tanh (1, 6, 13). float32 goes through glibc's vector tanhf (vector_math.h): about ten times the
// scalar speed, within the backend tests' tolerance. Other types use std::tanh.
#include <cmath>

#include "math_common.h"
#include "vector_math.h"

namespace refeval::ops {
namespace {

class Tanh : public OpRun {
 public:
  using Types = Floats;
  explicit Tanh(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() == DType::Float) {
      Tensor y = Tensor::uninitialized(DType::Float, x.shape());  // written in full
      tanh_floats(x.data<float>(), y.data<float>(), x.size());
      return {y};
    }
    return {visit<Types>(x.dtype(), [&]<class T>() { return map_unary<T>(x, [](auto v) { return std::tanh(v); }); })};
  }
};

}  // namespace

void register_tanh(Registry& reg) { reg.add("", "Tanh", {1, 6, 13}, make<Tanh>); }

}  // namespace refeval::ops
