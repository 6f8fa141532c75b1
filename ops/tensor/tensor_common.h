// Helpers shared by the tensor family: axis normalisation, reading index tensors, and one strided
// copy kernel that Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth all reduce to.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "refeval/dispatch.h"
#include "refeval/elementwise.h"
#include "refeval/op_run.h"
#include "refeval/tensor.h"
#include "refeval/threads.h"

namespace refeval::ops {

using IndexTypes = TypeList<int32_t, int64_t>;

// axis in [-rank, rank) -> [0, rank); anything else is a run-time error.
inline int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    fail_runtime(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

// The values of an int32 or int64 tensor as int64.
inline std::vector<int64_t> to_int64s(const Tensor& t) {
  return visit<IndexTypes>(t.dtype(), [&]<class I>() {
    const I* p = t.data<I>();
    return std::vector<int64_t>(p, p + t.size());
  });
}

// Typed view of a tensor's storage as the width type W (visit_by_width), whatever its element type.
template <class W> const W* raw_as(const Tensor& t) { return static_cast<const W*>(t.raw_data()); }
template <class W> W* raw_as(Tensor& t) { return static_cast<W*>(t.raw_data()); }

// Row strides of a dense row-major shape.
inline std::vector<int64_t> dense_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// out[i0..in] = src[offset + sum(i_k * strides[k])] for every index of out_shape, row-major.
// Strides may be zero (broadcast) or negative (reversed slices). Large copies split their rows
// across threads (a decode step's Expand of the KV cache for repeated heads).
template <class W>
void strided_copy(const W* src, int64_t offset, const std::vector<int64_t>& strides, const Shape& out_shape, W* dst) {
  // Drop size-1 dims and merge dims that are contiguous in the source.
  std::vector<int64_t> dims, st;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 0) return;
    if (out_shape[d] == 1) continue;
    if (!dims.empty() && st.back() == strides[d] * out_shape[d]) {
      dims.back() *= out_shape[d];
      st.back() = strides[d];
      continue;
    }
    dims.push_back(out_shape[d]);
    st.push_back(strides[d]);
  }
  if (dims.empty()) { dst[0] = src[offset]; return; }
  const size_t outer = dims.size() - 1;
  const int64_t n = dims.back(), s = st.back();
  int64_t rows = 1;
  for (size_t d = 0; d < outer; ++d) rows *= dims[d];
  // Rows [first, last) of the output, from the source offset of row `first`.
  auto copy_rows = [&](int64_t first, int64_t last) {
    std::vector<int64_t> idx(outer, 0);
    int64_t off = offset;
    for (size_t d = outer, r = size_t(first); d-- > 0;) {
      idx[d] = int64_t(r % size_t(dims[d]));
      r /= size_t(dims[d]);
      off += idx[d] * st[d];
    }
    W* out = dst + first * n;
    for (int64_t row = first; row < last; ++row, out += n) {
      const W* p = src + off;
      if (s == 1) for (int64_t i = 0; i < n; ++i) out[i] = p[i];
      else for (int64_t i = 0; i < n; ++i) out[i] = p[i * s];
      for (size_t d = outer; d-- > 0;) {
        off += st[d];
        if (++idx[d] < dims[d]) break;
        off -= st[d] * dims[d];
        idx[d] = 0;
      }
    }
  };
  parallel_for(rows, std::max<int64_t>(1, kParallelElements / n), copy_rows);
}

// A new tensor of out_shape read from `x` through strides and offset (in elements).
inline Tensor strided_view_copy(const Tensor& x, int64_t offset, const std::vector<int64_t>& strides, const Shape& out_shape) {
  Tensor y = Tensor::uninitialized(x.dtype(), out_shape);  // strided_copy writes every element
  visit_by_width(x.dtype(), [&]<class W>() { strided_copy<W>(raw_as<W>(x), offset, strides, out_shape, raw_as<W>(y)); });
  return y;
}

// Transpose of x by perm (a permutation of 0..rank-1, checked by the caller).
inline Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_st = dense_strides(x.shape());
  Shape out(perm.size());
  std::vector<int64_t> st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) { out[i] = x.dim(size_t(perm[i])); st[i] = in_st[size_t(perm[i])]; }
  return strided_view_copy(x, 0, st, out);
}

// Copies `count` elements between typed storages by width: dst[dst_off + i] = src[src_off + i].
template <class W>
inline void copy_elems(const W* src, W* dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
}

}  // namespace refeval::ops

namespace refeval::ops {

// Calls f(src_offset, dst_offset, run) for each contiguous innermost run of a box of `box` elements
// that starts at src_start in a tensor of src_shape and at dst_start in one of dst_shape.
template <class F>
void for_each_box_run(const Shape& box, const Shape& src_shape, const std::vector<int64_t>& src_start,
                      const Shape& dst_shape, const std::vector<int64_t>& dst_start, F&& f) {
  const size_t rank = box.size();
  for (int64_t b : box)
    if (b <= 0) return;
  const std::vector<int64_t> ss = dense_strides(src_shape), ds = dense_strides(dst_shape);
  if (rank == 0) { f(int64_t(0), int64_t(0), int64_t(1)); return; }
  std::vector<int64_t> idx(rank - 1, 0);
  while (true) {
    int64_t so = src_start[rank - 1], dof = dst_start[rank - 1];
    for (size_t d = 0; d + 1 < rank; ++d) {
      so += (src_start[d] + idx[d]) * ss[d];
      dof += (dst_start[d] + idx[d]) * ds[d];
    }
    f(so, dof, box[rank - 1]);
    size_t d = rank - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++idx[d] < box[d]) break;
      idx[d] = 0;
    }
  }
}

// Product of dims [from, to).
inline int64_t dims_product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to && d < s.size(); ++d) p *= s[d];
  return p;
}

}  // namespace refeval::ops
