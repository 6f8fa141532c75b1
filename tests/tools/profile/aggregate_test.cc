// Tables per op type, node and provider, and the before/after comparison, on ORT's real files.
#include <doctest/doctest.h>

#include "aggregate.h"
#include "render.h"

using namespace refeval::profile;

namespace {

std::string fixture(const std::string& name) { return std::string(REFEVAL_SOURCE_DIR) + "/tests/data/profiles/" + name; }

Table table_of(const std::string& name, GroupBy by, RunSelection sel = {}) {
  static std::deque<LoadedProfiles> keep;  // the rows point into the files
  const LoadedProfiles& p = keep.emplace_back(load_profiles({fixture(name)}, sel));
  return aggregate(p.label, p.runs_in_files, p.runs, by);
}

const Row& row(const Table& t, const std::string& key) {
  const auto it = std::find_if(t.rows.begin(), t.rows.end(), [&](const Row& r) { return r.key == key; });
  REQUIRE(it != t.rows.end());
  return *it;
}

}  // namespace

TEST_CASE("per op type: total, count, mean and share of the runs after the warm-up") {
  const Table t = table_of("ort-1.30-linreg-disabled.json", GroupBy::Op);
  CHECK(t.summary.runs_in_file == 4);
  CHECK(t.summary.runs_used == 3);
  REQUIRE(t.rows.size() == 3);
  const Row& add = row(t, "Add");
  CHECK(add.count == 6);  // two Add nodes x three runs
  CHECK(add.mean_ms == doctest::Approx(add.total_ms / 6));
  double pct = 0, total = 0;
  for (const Row& r : t.rows) pct += r.pct, total += r.total_ms;
  CHECK(pct == doctest::Approx(100));
  CHECK(t.summary.kernel_ms == doctest::Approx(total));
  CHECK(t.summary.kernel_ms <= t.summary.wall_ms);
  for (size_t i = 1; i < t.rows.size(); ++i) CHECK(t.rows[i - 1].total_ms >= t.rows[i].total_ms);
}

TEST_CASE("fence events are counted apart, not as calls") {
  const Table t = table_of("ort-web-1.16.3-linreg-fences.json", GroupBy::Op);
  CHECK(row(t, "Add").count == 6);
  CHECK(t.summary.fence_events == 24);
  CHECK(t.summary.kernel_events == 12);
}

TEST_CASE("per node and per provider") {
  const Table nodes = table_of("ort-1.30-linreg-disabled.json", GroupBy::Node);
  REQUIRE(nodes.rows.size() == 4);
  CHECK(row(nodes, "/Add_1").op_type == "Add");
  CHECK(row(nodes, "/Add_1").count == 3);
  const Table prov = table_of("ort-1.30-linreg-disabled.json", GroupBy::Provider);
  REQUIRE(prov.rows.size() == 1);
  CHECK(prov.rows[0].key == "CPUExecutionProvider");
  CHECK(prov.rows[0].count == 12);
  CHECK(prov.rows[0].pct == doctest::Approx(100));
}

TEST_CASE("compare: per-run times and counts, ops that vanished or appeared") {
  // ORT's `all` level fuses MatMul + Add into Gemm.
  const Comparison c = compare(table_of("ort-1.30-linreg-disabled.json", GroupBy::Op), table_of("ort-1.30-linreg-all.json", GroupBy::Op));
  auto find = [&](const std::string& k) {
    const auto it = std::find_if(c.rows.begin(), c.rows.end(), [&](const CompareRow& r) { return r.key == k; });
    REQUIRE(it != c.rows.end());
    return *it;
  };
  CHECK(find("MatMul").status == '-');
  CHECK(find("MatMul").after_count == 0);
  CHECK(find("MatMul").before_count == 1);
  CHECK(find("Gemm").status == '+');
  CHECK(find("Gemm").after_count == 1);
  CHECK(find("Add").status == '=');
  CHECK(find("Add").before_count == 2);
  CHECK(find("Add").after_count == 1);
  CHECK(find("Sqrt").speedup() == doctest::Approx(find("Sqrt").before_ms / find("Sqrt").after_ms));
}

TEST_CASE("renderings: the CSV header, aligned text, Markdown, JSON") {
  Table t = table_of("ort-1.30-linreg-disabled.json", GroupBy::Op);
  const std::string csv = render_table(t, Format::Csv);
  CHECK(csv.substr(0, csv.find('\n')) == "op_type,total_ms,count,mean_ms,pct");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  const std::string text = render_table(t, Format::Text);
  CHECK(text.find("runs 1-3 of 4 (run 0, the warm-up, left out)") != std::string::npos);
  CHECK(text.find("op_type  total_ms  count   mean_ms    pct") != std::string::npos);
  const std::string md = render_table(t, Format::Md);
  CHECK(md.find("| op_type | total_ms | count | mean_ms | pct |\n| --- | ---: | ---: | ---: | ---: |") == 0);
  const auto j = nlohmann::json::parse(render_table(t, Format::Json));
  CHECK(j["rows"].size() == 3);
  CHECK(j["runs_used"] == 3);
  keep_top(t, 1);
  CHECK(t.rows.size() == 1);
  CHECK(render_table(table_of("ort-1.30-linreg-disabled.json", GroupBy::Node), Format::Csv).find("node,op_type,provider,total_ms") == 0);
}

TEST_CASE("scope_of: the name scopes exporters write, cut at a depth") {
  CHECK(scope_of("/model/layers.3/self_attn/q_proj/MatMul", 2) == "model/layers.3");
  CHECK(scope_of("/model/layers.3/self_attn/q_proj/MatMul", 3) == "model/layers.3/self_attn");
  CHECK(scope_of("/model/layers.3/self_attn/q_proj/MatMul", 0) == "model/layers.3/self_attn/q_proj");
  CHECK(scope_of("/model/layers.3/self_attn/q_proj/MatMul", 9) == "model/layers.3/self_attn/q_proj");
  CHECK(scope_of("/lm_head/MatMul", 2) == "lm_head");
  CHECK(scope_of("model/norm/Mul", 1) == "model");  // ORT GenAI's builder may leave out the leading '/'
  CHECK(scope_of("/Add", 2) == "(no scope)");
  CHECK(scope_of("MatMul_12", 2) == "(no scope)");
  CHECK(scope_of("", 2) == "(no scope)");
}
