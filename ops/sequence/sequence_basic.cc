// SequenceConstruct, SequenceEmpty, SequenceLength, SequenceAt, SequenceInsert, SequenceErase:
// building, measuring, reading and editing sequences of tensors. Sequences are values; an edit
// returns a new sequence and leaves its input unchanged.
#include "refeval/registry.h"
#include "sequence_common.h"

namespace refeval::ops {
namespace {

// Tensors of one element type -> a sequence of them, in input order.
class SequenceConstruct : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceConstruct(const NodeContext& ctx) {
    if (ctx.num_inputs() < 1) ctx.fail("SequenceConstruct needs at least one input");
  }
  Values run(const Values& in, RunContext&) override {
    Sequence s;
    s.elem_dtype = input_tensor(in, 0).dtype();
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor& t = input_tensor(in, i);
      check_element(s, t);
      s.items.push_back(t);
    }
    return {std::move(s)};
  }
};

// An empty sequence of `dtype` tensors (default float).
class SequenceEmpty : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceEmpty(const NodeContext& ctx) {
    const int64_t d = ctx.attr<int64_t>("dtype", int64_t(DType::Float));
    if (!is_valid_dtype(int32_t(d)) || d == 0) ctx.fail(fmt::format("dtype {} is not an element type", d));
    dtype_ = DType(d);
  }
  Values run(const Values&, RunContext&) override { return {Sequence{dtype_, {}}}; }

 private:
  DType dtype_;
};

class SequenceLength : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceLength(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    return {Tensor::scalar<int64_t>(int64_t(input_sequence(in, 0).items.size()))};
  }
};

// The element at `position`, negative counting from the back.
class SequenceAt : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceAt(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    const Sequence& s = input_sequence(in, 0);
    return {s.items[sequence_position(input_tensor(in, 1), s.items.size(), false)]};
  }
};

// Inserts a tensor before `position` (default: at the end).
class SequenceInsert : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceInsert(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    Sequence s = input_sequence(in, 0);
    const Tensor& t = input_tensor(in, 1);
    check_element(s, t);
    if (s.elem_dtype == DType::Undefined) s.elem_dtype = t.dtype();
    const size_t pos = has_value(in, 2) ? sequence_position(input_tensor(in, 2), s.items.size(), true) : s.items.size();
    s.items.insert(s.items.begin() + std::ptrdiff_t(pos), t);
    return {std::move(s)};
  }
};

// Removes the element at `position` (default: the last one).
class SequenceErase : public OpRun {
 public:
  using Types = All;  // values are moved or passed on, never computed on
  explicit SequenceErase(const NodeContext&) {}
  Values run(const Values& in, RunContext&) override {
    Sequence s = input_sequence(in, 0);
    if (s.items.empty()) fail_runtime("cannot erase from an empty sequence");
    const size_t pos = has_value(in, 1) ? sequence_position(input_tensor(in, 1), s.items.size(), false) : s.items.size() - 1;
    s.items.erase(s.items.begin() + std::ptrdiff_t(pos));
    return {std::move(s)};
  }
};

}  // namespace

void register_sequence_basic(Registry& reg) {
  reg.add("", "SequenceConstruct", {11}, make<SequenceConstruct>);
  reg.add("", "SequenceEmpty", {11}, make<SequenceEmpty>);
  reg.add("", "SequenceLength", {11}, make<SequenceLength>);
  reg.add("", "SequenceAt", {11}, make<SequenceAt>);
  reg.add("", "SequenceInsert", {11}, make<SequenceInsert>);
  reg.add("", "SequenceErase", {11}, make<SequenceErase>);
}

}  // namespace refeval::ops
