// Post-processors: the special tokens added around one sequence ([CLS] ... [SEP], <s> ...).
// Pairs of sequences are not encoded by refeval, so only the "single" templates are read.
#include <fmt/format.h>

#include "components.h"

namespace refeval::tokenizer {
namespace {

// The ids before and after the sequence.
class Around : public PostProcessor {
 public:
  Around(std::vector<int64_t> before, std::vector<int64_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  std::vector<int64_t> process(std::vector<int64_t> ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return ids;
    std::vector<int64_t> out = before_;
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), after_.begin(), after_.end());
    return out;
  }

 private:
  std::vector<int64_t> before_, after_;
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  std::vector<int64_t> process(std::vector<int64_t> ids, bool add_special_tokens) const override {
    for (const auto& p : steps_) ids = p->process(std::move(ids), add_special_tokens);
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

class Identity : public PostProcessor {
 public:
  std::vector<int64_t> process(std::vector<int64_t> ids, bool) const override { return ids; }
};

// "single": [{"SpecialToken": {"id": "[CLS]", ...}}, {"Sequence": {"id": "A", ...}}, ...] with the
// ids of each special token in "special_tokens": {"[CLS]": {"ids": [101], ...}}.
std::unique_ptr<PostProcessor> template_processing(const json& j, const std::string& at) {
  const json& single = container_field(j, "single", at);
  const json& specials = container_field(j, "special_tokens", at, true);
  std::vector<int64_t> before, after;
  int sequences = 0;
  for (const json& item : single) {
    if (item.is_object() && item.contains("Sequence")) {
      const std::string id = string_field(item["Sequence"], "id", at + " single");
      if (id != "A") fail_at(at, fmt::format("the single template refers to sequence '{}'; only A exists", id));
      ++sequences;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      const std::string name = string_field(item["SpecialToken"], "id", at + " single");
      if (!specials.contains(name)) fail_at(at, fmt::format("special token '{}' of the template is not in \"special_tokens\"", name));
      const json& ids = container_field(specials[name], "ids", fmt::format("{} special_tokens[\"{}\"]", at, name));
      for (const json& id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0) fail_at(at, fmt::format("special token '{}' has id {}", name, id.dump()));
        (sequences == 0 ? before : after).push_back(id.get<int64_t>());
      }
    } else {
      fail_at(at, fmt::format("template item {} is neither a Sequence nor a SpecialToken", item.dump()));
    }
  }
  if (sequences != 1) fail_at(at, fmt::format("the single template holds sequence A {} times, not once", sequences));
  return std::make_unique<Around>(std::move(before), std::move(after));
}

// "cls": ["[CLS]", 101], "sep": ["[SEP]", 102].
int64_t token_pair_id(const json& j, const char* key, const std::string& at) {
  const json& p = container_field(j, key, at);
  if (p.size() != 2 || !p[1].is_number_integer() || p[1].get<int64_t>() < 0)
    fail_at(at, fmt::format("\"{}\" must be [token, id], got {}", key, p.dump()));
  return p[1].get<int64_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  const std::string type = type_of(j, where);
  const std::string at = fmt::format("{} ({})", where, type);
  if (type == "TemplateProcessing") return template_processing(j, at);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return std::make_unique<Around>(std::vector<int64_t>{token_pair_id(j, "cls", at)}, std::vector<int64_t>{token_pair_id(j, "sep", at)});
  if (type == "ByteLevel") return std::make_unique<Identity>();  // it trims offsets only, which refeval does not report
  if (type == "Sequence") return std::make_unique<Sequence>(sequence_steps<PostProcessor>(j, "processors", where, at, make_post_processor));
  fail_at(where, fmt::format("post_processor type '{}' is not supported (supported: TemplateProcessing, BertProcessing, "
                             "RobertaProcessing, ByteLevel, Sequence)",
                             type));
}

}  // namespace refeval::tokenizer
