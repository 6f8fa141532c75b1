// refeval.profile(), optimize() and quantize(): the profile, optimize and quantize libraries for Python.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

namespace refeval::python {

namespace py = pybind11;

// Runs `warmup` + `repeat` profiled runs, writes ORT's profile JSON to `out`, returns its
// summary and per-op-type rows of the profiled runs.
py::dict profile_model(const std::string& model_path, const py::dict& feeds, int warmup, int repeat, const std::string& out);
// The kernel events of the selected runs of profile files (the runs `refeval report` reads, see
// profile/runs.h) as columns {name: [values]}, and the runs with their wall and fence times.
py::dict profile_events(const std::vector<std::string>& paths, const std::string& range, bool include_warmup, const std::string& phase);
// `refeval show --format html` of a model, with a profile's heat or beside a second model.
std::string show_html(const std::string& model_path, const std::string& profile_path, const std::string& diff_path);
// Optimizes `in` into `out`; returns the node counts, the statistics counters and op counts.
py::dict optimize_model(const std::string& in, const std::string& out, const std::string& level, const std::string& model_type,
                        const std::vector<std::string>& only, const std::vector<std::string>& disable, const std::string& target,
                        const std::string& forms);
// Quantizes `in` into `out` as `refeval quantize --int4` or `--int8` does (scheme "int4" or "int8");
// returns the nodes quantized (and embedding tables), those left with the reason, the computed
// products and the sizes.
py::dict quantize_model(const std::string& in, const std::string& out, const std::string& scheme, int64_t block_size,
                        bool symmetric, int64_t accuracy_level, bool embeddings, const std::string& algo, bool per_channel,
                        bool reduce_range, const std::vector<std::string>& exclude, bool keep_io_types,
                        const std::vector<std::string>& float16_block, const py::list& feed_sets);

// The generation loop of `refeval generate`; returns its JSON summary as a string (tokens, times,
// memory); `profile` non-empty writes the phase-tagged profile there.
// Two decoders on token windows (refeval compare --tokens): the figures as JSON, per token included.
std::string compare_language_models(const std::string& a_path, const std::string& b_path, const py::handle& tokens, int64_t context,
                                    int generate);
std::string generate_model(const std::string& model_path, const py::handle& prompt, const py::handle& prompt_mask, int new_tokens,
                           std::optional<int64_t> eos, std::optional<int64_t> max_length, const std::string& profile);

// Reduces a failing model as `refeval reduce` does and writes `out` with test_data_set_K/ beside
// it. `predicate` is "nan", "compare", "check" or "error" with its `argument` (dump folder, command,
// regular expression). Returns the node counts, the kept nodes, the steps and the verdict.
py::dict reduce_model(const std::string& model_path, const std::string& out, const py::list& feed_sets, const std::string& predicate,
                      const std::string& argument, double rtol, double atol, const std::string& mode, const std::string& freeze,
                      bool all_sets, int max_steps);

// `refeval accuracy`: the model against its float64 oracle, or against `reference` when it is not
// None (a path or serialized ModelProto bytes, like `model`). Returns the --json document as text.
std::string accuracy_model(const py::object& model, const py::dict& feeds, const py::object& reference, int top_k, bool local);

}  // namespace refeval::python
