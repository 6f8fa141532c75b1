// Two models' outputs over many input sets (`refeval compare A B --input-set DIR ... | --random-sets
// N`), as Polygraphy's `check accuracy` judges them: per output, the largest absolute and relative
// errors, the cosine similarity and signal-to-noise ratio of each set (their lowest over the sets),
// and how often the largest value along the last axis (a class, a token) is the same, with the
// set where the output is furthest apart.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "refeval/tensor.h"

namespace refeval::quality {

struct OutputStats {
  std::string name;
  int sets = 0;
  double max_abs = 0, max_rel = 0;
  double cosine_min = 1, cosine_mean = 0;
  double snr_db_min = std::numeric_limits<double>::infinity(), snr_db_mean = 0;  // infinite when equal
  int64_t rows = 0, top1_same = 0;  // rows along the last axis, and those whose argmax agrees
  std::string worst_set;            // the set of the lowest SNR
  double top1_agreement() const { return rows ? double(top1_same) / double(rows) : 1.0; }
  // Adds one set's outputs (same shape; any numeric type, compared in float64).
  void add(const std::string& set, const Tensor& a, const Tensor& b);
  nlohmann::ordered_json to_json() const;

 private:
  double snr_sum_ = 0;
  int snr_finite_ = 0;
};

}  // namespace refeval::quality
