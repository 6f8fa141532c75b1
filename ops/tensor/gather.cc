// Gather: picks slices of `data` along an axis by an index tensor (negative indices count from the
// end); out.shape = data.shape[:axis] + indices.shape + data.shape[axis+1:].
#include "tensor_common.h"

#include "refeval/file_backed.h"
#include "refeval/registry.h"

#include <cstring>
#include <optional>

namespace refeval::ops {
namespace {

class Gather : public OpRun {
 public:
  using Types = All;
  explicit Gather(const NodeContext& ctx) : axis_(ctx.attr<int64_t>("axis", 0)) {
    // Rows of a constant table the loader had to copy out of the model file (its bytes lie there
    // at an offset not aligned for its type) are read from the file instead: a session that lets
    // absorbed weights go (EvaluatorOptions::release_packed_weights) then holds no copy of an
    // embedding table, and the rows no run touches stay on disk.
    const Initializer* t = ctx.constant_input(0);
    if (!t || t->value.rank() < 1 || (axis_ != 0 && axis_ != -int64_t(t->value.rank()))) return;
    if (FileBytes source = copied_from(t->value.raw_data()); source.file) {
      table_ = Table{std::move(source), t->value.dtype(), t->value.shape()};
      ctx.absorb_input(0);
    }
  }
  Values run(const Values& in, RunContext&) override {
    if (!has_value(in, 0) && table_) return {rows_from_file(input_tensor(in, 1))};
    const Tensor& x = input_tensor(in, 0);
    const Tensor& ind = input_tensor(in, 1);
    const int64_t rank = int64_t(x.rank());
    if (rank == 0) fail_runtime("Gather: data must have rank >= 1");
    const int64_t axis = normalize_axis(axis_, rank);
    const int64_t dim = x.dim(size_t(axis));
    std::vector<int64_t> idx = to_int64s(ind);
    for (int64_t& i : idx) {
      if (i < -dim || i >= dim) fail_runtime(fmt::format("Gather: index {} is out of range for an axis of size {}", i, dim));
      if (i < 0) i += dim;
    }
    Shape out(x.shape().begin(), x.shape().begin() + axis);
    out.insert(out.end(), ind.shape().begin(), ind.shape().end());
    out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(size_t(d));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(size_t(d));
    Tensor y(x.dtype(), out);
    visit_by_width(x.dtype(), [&]<class W>() {
      const W* src = raw_as<W>(x);
      W* dst = raw_as<W>(y);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : idx) {
          copy_elems(src + (o * dim + i) * inner, dst, inner);
          dst += inner;
        }
    });
    return {y};
  }

 private:
  // Gather along axis 0 from the table's bytes in the file: the same rows, byte for byte.
  Tensor rows_from_file(const Tensor& ind) const {
    const Table& t = *table_;
    const int64_t dim = t.shape[0];
    std::vector<int64_t> idx = to_int64s(ind);
    Shape out = ind.shape();
    out.insert(out.end(), t.shape.begin() + 1, t.shape.end());
    Tensor y = Tensor::uninitialized(t.dtype, out);
    const size_t row = size_t(shape_size(Shape(t.shape.begin() + 1, t.shape.end()))) * dtype_size(t.dtype);
    const char* base = reinterpret_cast<const char*>(t.source.file->data()) + t.source.offset;
    char* dst = static_cast<char*>(y.raw_data());
    for (int64_t i : idx) {
      if (i < -dim || i >= dim) fail_runtime(fmt::format("Gather: index {} is out of range for an axis of size {}", i, dim));
      std::memcpy(dst, base + size_t(i < 0 ? i + dim : i) * row, row);
      dst += row;
    }
    return y;
  }
  struct Table {
    FileBytes source;
    DType dtype;
    Shape shape;
  };
  int64_t axis_;
  std::optional<Table> table_;
};

}  // namespace

void register_gather(Registry& reg) {
  reg.add("", "Gather", {1, 11, 13}, make<Gather>);
}

}  // namespace refeval::ops
