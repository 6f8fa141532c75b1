// Where: out = condition ? X : Y, broadcasting all three inputs numpy-style. Any element type;
// elements are copied by width.
#include "math_common.h"

namespace refeval::ops {
namespace {

// out[i] = c[i * SC] ? x[i * SX] : y[i * SY] for a run of n outputs. The strides (0 or 1) as
// template arguments, and the choice as a bit mask over both values (the storage words of
// visit_by_width), let the common runs (all 1, or a scalar X or Y) compile to vector loops: a
// load under a condition, or a select on a bool, stayed a branch per element.
template <int SC, int SX, int SY, class W>
void select_run(const bool* c, const W* x, const W* y, W* out, int64_t n) {
  if constexpr (std::is_unsigned_v<W>) {
    const auto* cb = reinterpret_cast<const uint8_t*>(c);  // a bool's byte, tested as any byte
    for (int64_t i = 0; i < n; ++i) {
      const W mask = W(W(0) - W(cb[i * SC] != 0));  // all ones where the condition holds
      out[i] = W((x[i * SX] & mask) | (y[i * SY] & W(~mask)));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = c[i * SC] ? x[i * SX] : y[i * SY];
  }
}

class Where : public OpRun {
 public:
  using Types = All;
  explicit Where(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Tensor& c = input_tensor(in, 0);
    const Tensor& x = input_tensor(in, 1);
    const Tensor& y = input_tensor(in, 2);
    if (c.dtype() != DType::Bool) fail_runtime(fmt::format("condition must be bool, got {}", dtype_short_name(c.dtype())));
    require_same_dtype(x, y, "X and Y");
    if (!Types::contains(x.dtype())) fail_unsupported_dtype(x.dtype(), Types::dtypes());
    Tensor out = Tensor::uninitialized(x.dtype(), broadcast_shapes({c.shape(), x.shape(), y.shape()}));
    const bool* pc = c.data<bool>();
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* px = static_cast<const W*>(x.raw_data());
      const W* py = static_cast<const W*>(y.raw_data());
      W* po = static_cast<W*>(out.raw_data());
      BroadcastWalker<3>(out.shape(), {&c.shape(), &x.shape(), &y.shape()})
          .parallel_for_each_run([&](int64_t o, const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& s) {
            const bool* rc = pc + off[0];
            const W *rx = px + off[1], *ry = py + off[2];
            switch (s[0] | s[1] << 1 | s[2] << 2) {
              case 7: select_run<1, 1, 1>(rc, rx, ry, po + o, n); break;
              case 3: select_run<1, 1, 0>(rc, rx, ry, po + o, n); break;
              case 5: select_run<1, 0, 1>(rc, rx, ry, po + o, n); break;
              case 1: select_run<1, 0, 0>(rc, rx, ry, po + o, n); break;
              case 6: select_run<0, 1, 1>(rc, rx, ry, po + o, n); break;
              case 2: select_run<0, 1, 0>(rc, rx, ry, po + o, n); break;
              case 4: select_run<0, 0, 1>(rc, rx, ry, po + o, n); break;
              default: select_run<0, 0, 0>(rc, rx, ry, po + o, n); break;
            }
          });
    });
    return {out};
  }
};

}  // namespace

void register_where(Registry& reg) { reg.add("", "Where", {9, 16}, make<Where>); }

}  // namespace refeval::ops
