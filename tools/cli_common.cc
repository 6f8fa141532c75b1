#include "refeval/isa.h"
#include "cli_common.h"

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <cmath>
#include <random>
#include <regex>
#include <set>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "refeval/numerics.h"
#include "refeval/threads.h"
#include "refeval/format.h"
#include "refeval/model_io.h"
#include "refeval/plugin.h"

namespace refeval::cli {
namespace fs = std::filesystem;

const Registry& registry(const GlobalOptions& g) {
  static std::unique_ptr<Registry> with_plugins;
  if (g.custom_ops.empty()) return Registry::builtin();
  if (!with_plugins) {
    with_plugins = std::make_unique<Registry>(&Registry::builtin(), "plugin");
    for (const auto& lib : g.custom_ops) load_plugin(*with_plugins, lib);
  }
  return *with_plugins;
}

void apply_limits(const GlobalOptions& g) {
  set_loop_iteration_cap(g.max_loop_iterations);
  set_thread_count(g.threads);
  if (!g.isa.empty()) force_isa(parse_isa(g.isa));
  set_emulate_accuracy_level(g.emulate_accuracy_level);
  if (g.max_memory.empty()) {
    const uint64_t physical = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
    set_memory_cap(physical / 5 * 4);
    return;
  }
  static const std::regex size_re(R"(^(\d+)([KMGT]?)B?$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(g.max_memory, m, size_re)) fail_usage(fmt::format("--max-memory: '{}' is not a size like 8G or 512M", g.max_memory));
  const std::string unit = m[2].str();
  const int shift = unit.empty() ? 0 : 10 * int(std::string("KMGT").find(char(std::toupper(unit[0]))) + 1);
  uint64_t value = 0;
  const std::string digits = m[1].str();
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || value > (UINT64_MAX >> shift))
    fail_usage(fmt::format("--max-memory: '{}' does not fit in 64 bits", g.max_memory));
  set_memory_cap(value << shift);
}

void InputOptions::add_to(CLI::App* app) {
  app->add_option("--input", inputs, "NAME=FILE: feed an input from a .pb or .npy file (repeatable)");
  app->add_option("--inputs", inputs_dir, "DIR: feed input_K.pb files (backend-test layout)");
  app->add_option("--seed", seed, "seed of the generated inputs (default 0)");
  app->add_option("--dim", dims, "NAME=V: value of a symbolic dimension (default 1; repeatable)");
  app->add_option("--fill", fills, "NAME=VALUE: fill an input with a constant (repeatable)");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::pair<std::string, std::string> split_assignment(const std::string& s, const char* option) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) fail_usage(fmt::format("{} expects NAME=VALUE, got '{}'", option, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

namespace {

Shape concrete_shape(const std::string& name, const ValueType& t, const std::map<std::string, int64_t>& dims) {
  if (t.kind != ValueType::Kind::Tensor) fail_input(fmt::format("input '{}' ({}) cannot be generated; give it with --input", name, t.to_string()));
  if (!t.has_shape) fail_input(fmt::format("input '{}' has unknown rank; give it with --input", name));
  Shape s;
  for (const Dim& d : t.dims) {
    if (d.fixed()) s.push_back(d.value);
    else if (auto it = dims.find(d.param); !d.param.empty() && it != dims.end()) s.push_back(it->second);
    else s.push_back(1);
  }
  return s;
}

bool names_a_dimension(const Graph& g, const std::string& symbol) {
  for (const ValueInfo* vi : g.feed_inputs())
    for (const Dim& d : vi->type.dims)
      if (d.param == symbol) return true;
  return false;
}

// refeval's documented generator (README, "Generated inputs"): one std::mt19937_64 seeded with
// --seed, drawn in input order. Floats: (x >> 11) * 2^-53, converted to the element type and
// never rounded up to 1; integers: x % 10; bool: x & 1; strings: "s<k>" for element k.
Tensor generate(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  visit<All>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) {
      const uint64_t x = rng();
      if constexpr (std::is_same_v<T, std::string>) p[i] = fmt::format("s{}", i);
      else if constexpr (std::is_same_v<T, bool>) p[i] = (x & 1) != 0;
      else if constexpr (std::is_floating_point_v<T> || is_narrow_float_v<T>) {
        const double u = double(x >> 11) * 0x1.0p-53;
        if constexpr (std::is_same_v<T, double>) p[i] = u;
        else if constexpr (std::is_same_v<T, float>) p[i] = std::min(float(u), std::nextafter(1.0f, 0.0f));
        else {
          T v = T(float(u));
          if (double(v) >= 1.0) v = T::from_bits(decltype(v.bits)(v.bits - 1));  // the value just below 1
          p[i] = v;
        }
      } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
        p[i] = T(typename T::value_type(double(x >> 11) * 0x1.0p-53), 0);
      } else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>) {
        p[i] = T::wrap(int64_t(x % uint64_t(T::highest + 1)));
      } else p[i] = T(x % 10);
    }
  });
  return t;
}

Tensor filled(DType dtype, const Shape& shape, const std::string& text, const std::string& name) {
  Tensor t(dtype, shape);
  double v = 0;
  if (dtype != DType::String) {
    try { size_t used; v = std::stod(text, &used); if (used != text.size()) throw 0; }
    catch (...) { fail_usage(fmt::format("--fill {}: '{}' is not a number", name, text)); }
  }
  visit<All>(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.size(); ++i) {
      if constexpr (std::is_same_v<T, std::string>) p[i] = text;
      else if constexpr (std::is_same_v<T, bool>) p[i] = v != 0;
      else if constexpr (std::is_same_v<T, int4> || std::is_same_v<T, uint4> || std::is_same_v<T, int2> || std::is_same_v<T, uint2>) p[i] = T::wrap(int64_t(v));
      else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) p[i] = T(typename T::value_type(v), 0);
      else p[i] = T(v);
    }
  });
  return t;
}

// What a decoder's or encoder's position and mask inputs mean (docs/cli/README.md, "Generated
// inputs"): random ids there index past the end of a rotary table sliced to the sequence length, or
// hide every key. A generated integer or bool input named as a mask (`attention_mask`,
// `encoder_attention_mask`) is all ones; one named `position_ids` or `cache_position` counts the
// positions of the new tokens after the past, the past being the mask's length minus the
// sequence's (0 without a mask).
void give_roles(const Graph& g, const std::set<std::string>& generated, std::map<std::string, Value>& feeds) {
  auto is_mask = [](const std::string& n) { return n.find("attention_mask") != std::string::npos; };
  auto is_position = [](const std::string& n) { return n.find("position_ids") != std::string::npos || n == "cache_position"; };
  auto generated_integers = [&](const ValueInfo* vi) {
    if (!generated.count(vi->name) || !feeds.at(vi->name).is_tensor()) return false;
    const DType t = feeds.at(vi->name).tensor().dtype();
    return t == DType::Bool || is_integer_dtype(t);
  };
  int64_t mask_length = -1;
  for (const ValueInfo* vi : g.feed_inputs()) {
    if (!is_mask(vi->name) || !generated_integers(vi)) continue;
    const Tensor& t = feeds.at(vi->name).tensor();
    if (vi->name == "attention_mask" && t.rank() >= 1) mask_length = t.shape().back();
    feeds[vi->name] = Value(filled(t.dtype(), t.shape(), "1", vi->name));
  }
  for (const ValueInfo* vi : g.feed_inputs()) {
    if (!is_position(vi->name) || !generated_integers(vi)) continue;
    Tensor t = feeds.at(vi->name).tensor();
    if (t.dtype() == DType::Bool || t.rank() == 0 || t.shape().back() == 0) continue;
    const int64_t length = t.shape().back(), past = mask_length > length ? mask_length - length : 0;
    visit<Ints>(t.dtype(), [&]<class T>() {
      for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = T(past + i % length);
    });
    feeds[vi->name] = Value(std::move(t));
  }
}

}  // namespace

Model open_model(const std::string& path) {
  std::error_code ec;
  const uintmax_t bytes = fs::file_size(path, ec);
  const auto start = std::chrono::steady_clock::now();
  std::optional<Progress> note;
  if (!ec && bytes >= kLargeModelBytes) note.emplace(fmt::format("loading {} ({} MB)", path, bytes >> 20));
  Model m = load_model(path);
  spdlog::debug("loaded {} in {:.3f} s", path, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return m;
}

InputOptions input_set_options(const InputOptions& base, const std::string& dir) {
  if (!fs::is_directory(dir)) fail_input(fmt::format("--input-set: '{}' is not a folder", dir));
  InputOptions o = base;
  bool npy = false;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".npy") o.inputs.push_back(e.path().stem().string() + "=" + e.path().string()), npy = true;
  if (!npy) o.inputs_dir = dir;
  return o;
}

std::map<std::string, Value> make_feeds(const ReferenceEvaluator& ev, const InputOptions& opt) {
  const Graph& g = ev.model().graph;
  std::map<std::string, Value> feeds;
  for (const auto& spec : opt.inputs) {
    auto [name, file] = split_assignment(spec, "--input");
    const ValueInfo* vi = g.find_input(name);
    if (!vi) fail_input(fmt::format("--input {}: the model has no input named '{}'", spec, name));
    feeds[name] = read_value_file(file, &vi->type);
  }
  if (!opt.inputs_dir.empty()) {
    if (!fs::is_directory(opt.inputs_dir)) fail_input(fmt::format("--inputs {}: not a folder", opt.inputs_dir));
    const auto feedable = g.feed_inputs();
    for (size_t k = 0; k < feedable.size(); ++k) {
      const std::string file = (fs::path(opt.inputs_dir) / fmt::format("input_{}.pb", k)).string();
      if (!fs::exists(file)) {
        if (!feeds.count(feedable[k]->name))
          spdlog::warn("--inputs {}: no input_{}.pb for input '{}'; it is generated", opt.inputs_dir, k, feedable[k]->name);
        continue;
      }
      if (!feeds.count(feedable[k]->name)) feeds[feedable[k]->name] = read_value_pb(file, &feedable[k]->type);
    }
  }
  std::map<std::string, int64_t> dims;
  for (const auto& spec : opt.dims) {
    auto [name, value] = split_assignment(spec, "--dim");
    try { dims[name] = std::stoll(value); } catch (...) { fail_usage(fmt::format("--dim {}: '{}' is not an integer", name, value)); }
    if (dims[name] < 0) fail_usage(fmt::format("--dim {}: must not be negative", name));
    if (!names_a_dimension(g, name)) spdlog::warn("--dim {}: no model input has a dimension named '{}'", spec, name);
  }
  std::map<std::string, std::string> fills;
  for (const auto& spec : opt.fills) {
    auto [name, value] = split_assignment(spec, "--fill");
    if (!g.find_input(name)) fail_input(fmt::format("--fill {}: the model has no input named '{}'", spec, name));
    fills[name] = value;
  }
  std::mt19937_64 rng(opt.seed);
  std::set<std::string> generated;
  for (const ValueInfo* vi : g.feed_inputs()) {
    if (feeds.count(vi->name)) continue;
    if (!fills.count(vi->name)) generated.insert(vi->name);
    const Shape shape = concrete_shape(vi->name, vi->type, dims);
    if (vi->type.dtype == DType::Undefined) fail_input(fmt::format("input '{}' has no element type; give it with --input", vi->name));
    auto f = fills.find(vi->name);
    feeds[vi->name] = f != fills.end() ? filled(vi->type.dtype, shape, f->second, vi->name) : generate(vi->type.dtype, shape, rng);
    spdlog::debug("input '{}' {} ({})", vi->name, f != fills.end() ? "filled" : "generated", describe(feeds[vi->name], 3));
  }
  for (const auto& [name, value] : fills)
    if (!feeds.count(name) || g.find_initializer(name)) {
      const ValueInfo* vi = g.find_input(name);
      feeds[name] = filled(vi->type.dtype, concrete_shape(name, vi->type, dims), value, name);
    }
  give_roles(g, generated, feeds);
  return feeds;
}

void write_output(const std::string& path, const std::string& text, const std::string& what) {
  if (path.empty()) {
    fmt::print("{}", text);
    std::fflush(stdout);
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) fail_input(fmt::format("{}: cannot write the {}", path, what));
  spdlog::info("{} written to {}", what, path);
}

}  // namespace refeval::cli
