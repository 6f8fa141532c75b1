// `optimize --benchmark-with-ort`: the original and the optimized model timed side by side in ONNX
// Runtime (onnxruntime-node, CPU, level all) on the same feeds, which is where an optimized model's
// speed counts. The timing is benchmarks/ort/time_pair.js's: alternated rounds, the median of the
// rounds' ratios, so the machine's drift cancels.
#pragma once

#include <map>
#include <string>

#include "refeval/value.h"

namespace refeval::optimize {

struct OrtTimingOptions {
  int threads = 1;  // ORT's intraOpNumThreads (0: ORT's default, every core)
  int repeat = 10;  // runs per round (the round's time is their median)
  int rounds = 5;   // alternated rounds
};

struct OrtTiming {
  double original_ms = 0, optimized_ms = 0;
  double ratio = 0;       // optimized / original: the median of the rounds' ratios
  double max_abs_diff = 0, max_abs = 0;  // the outputs' largest difference, and the original's largest magnitude
};

// The folder holding time_pair.js and onnxruntime-node: $REFEVAL_ORT_DIR, else the source tree's
// benchmarks/ort. Fails (usage error, one line) when node or onnxruntime-node cannot be found,
// and with the runtime's first line when ORT cannot load or run either model.
OrtTiming time_in_ort(const std::string& original, const std::string& optimized, const std::map<std::string, Value>& feeds,
                      const OrtTimingOptions& options);

}  // namespace refeval::optimize
