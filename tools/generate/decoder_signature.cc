#include "decoder_signature.h"

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval::generate {
namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// present.N.key for past_key_values.N.key; present_key_N for past_key_N; present_N for past_N.
std::string present_name(const std::string& past) {
  for (const char* prefix : {"past_key_values", "past"}) {
    const size_t at = past.find(prefix);
    if (at != std::string::npos) return past.substr(0, at) + "present" + past.substr(at + std::string(prefix).size());
  }
  return "";
}

bool same_dim(const Dim& a, const Dim& b) { return a.fixed() ? a.value == b.value : (!a.param.empty() && a.param == b.param); }
bool declared(const Dim& d) { return d.fixed() || !d.param.empty(); }

const ValueInfo* find_output(const Graph& g, const std::string& name) {
  for (const ValueInfo& o : g.outputs)
    if (o.name == name) return &o;
  return nullptr;
}

// The past's sequence axis: where its declared dims differ from the present's (the past length
// against the total length); a dim either leaves unknown (neither a size nor a name) tells nothing.
// Equal dims everywhere mean a static cache: the axis after the heads.
int length_axis(const KvInput& kv, const ValueType& present) {
  const auto& d = kv.type.dims;
  if (!kv.type.has_shape || (d.size() != 4 && d.size() != 5))
    fail_usage(fmt::format("past input '{}' has shape {}, expected rank 4 (B, N, P, H) or 5 (2, B, N, P, H)", kv.past,
                           kv.type.to_string()));
  const int first = kv.stacked ? 2 : 1, last = kv.stacked ? 3 : 2;
  if (present.has_shape && present.dims.size() == d.size())
    for (int a = first; a <= last; ++a)
      if (declared(d[size_t(a)]) && declared(present.dims[size_t(a)]) && !same_dim(d[size_t(a)], present.dims[size_t(a)])) return a;
  // no difference declared: the symbolic axis of the two, else BNSH
  if (!d[size_t(first)].fixed() && d[size_t(last)].fixed()) return first;
  return last;
}

}  // namespace

DecoderSignature find_signature(const Graph& graph) {
  DecoderSignature s;
  std::vector<std::string> unknown;
  for (const ValueInfo* in : graph.feed_inputs()) {
    const std::string& n = in->name;
    if (n == "input_ids") s.input_ids = n;
    else if (n == "attention_mask") s.attention_mask = n;
    else if (n == "position_ids") s.position_ids = n;
    else if (n == "cache_position") s.cache_position = n;
    else if (n == "use_cache_branch") s.use_cache_branch = n;
    else if (contains(n, "past")) {
      KvInput kv{n, present_name(n), 2, false, in->type};
      const ValueInfo* present = find_output(graph, kv.present);
      if (!present) fail_usage(fmt::format("past input '{}' has no matching output '{}'", n, kv.present));
      kv.stacked = in->type.has_shape && in->type.dims.size() == 5;
      kv.length_axis = length_axis(kv, present->type);
      const auto& pd = present->type.dims;
      if (present->type.has_shape && pd.size() == kv.type.dims.size() &&
          same_dim(pd[size_t(kv.length_axis)], kv.type.dims[size_t(kv.length_axis)]))
        s.static_cache = true;
      s.kv.push_back(std::move(kv));
    } else {
      unknown.push_back(n);
    }
  }
  if (s.input_ids.empty()) fail_usage("not a decoder: no input 'input_ids'");
  if (!unknown.empty())
    fail_usage(fmt::format("input '{}' is none of a decoder's inputs (input_ids, attention_mask, position_ids, "
                           "cache_position, use_cache_branch, past_*)", unknown.front()));
  for (const char* name : {"logits", "last_hidden_state"})
    if (find_output(graph, name)) {
      s.logits = name;
      break;
    }
  if (s.logits.empty()) fail_usage("not a decoder: no output 'logits'");
  if (s.kv.empty()) fail_usage("not a decoder with a KV cache: no 'past_*' input paired with a 'present*' output");
  const Dim& len = s.kv.front().type.dims[size_t(s.kv.front().length_axis)];
  if (len.fixed()) s.static_length = len.value;
  if (!s.cache_position.empty()) {
    const ValueInfo* cp = graph.find_input(s.cache_position);
    const ValueInfo* ids = graph.find_input(s.input_ids);
    s.cache_position_per_row = cp->type.has_shape && cp->type.dims.size() == 1 && ids->type.has_shape &&
                               !ids->type.dims.empty() && same_dim(cp->type.dims[0], ids->type.dims[0]);
  }
  return s;
}

std::string DecoderSignature::describe() const {
  const KvInput& first = kv.front();
  const char* layout = first.stacked ? "stacked (2, B, N, P, H)" : first.length_axis == 2 ? "BNSH" : "BSNH";
  std::string extras;
  for (const auto& [name, what] : {std::pair{attention_mask, "attention_mask"}, {position_ids, "position_ids"},
                                   {cache_position, "cache_position"}, {use_cache_branch, "use_cache_branch"}})
    if (!name.empty()) extras += std::string(", ") + what;
  return fmt::format("decoder: input_ids{} -> {}; {} KV cache tensors ({} -> {} ...), {} {}{}", extras, logits, kv.size(),
                     first.past, first.present, layout, dtype_short_name(first.type.dtype),
                     static_length ? fmt::format(", static length {}", *static_length)
                     : static_cache ? std::string(", static cache") : std::string());
}

}  // namespace refeval::generate
