// Name-scope groups (tools/show/scopes.h) on small hand-written graphs.
#include <doctest/doctest.h>

#include "aggregate.h"
#include "scopes.h"

using namespace refeval;
using namespace refeval::show;

namespace {

Node node(std::string name, std::string op, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.name = std::move(name), n.op_type = std::move(op), n.inputs = std::move(in), n.outputs = std::move(out);
  return n;
}

// One decoder layer as torch names it: a norm (2 nodes), attention (q_proj alone in its scope, a
// MatMul and a Softmax in self_attn), a residual Add, and a constant named without a scope.
void add_layer(Graph& g, int k, const std::string& x, bool extra = false) {
  const std::string p = "/layers." + std::to_string(k), v = "l" + std::to_string(k);
  g.nodes.push_back(node(p + "/norm/Pow", "Pow", {x}, {v + "a"}));
  g.nodes.push_back(node(p + "/norm/Mul", "Mul", {v + "a", x}, {v + "b"}));
  g.nodes.push_back(node("Constant_" + std::to_string(10 + k), "Constant", {}, {v + "c"}));
  g.nodes.push_back(node(p + "/self_attn/q_proj/MatMul", "MatMul", {v + "b", x}, {v + "q"}));
  g.nodes.push_back(node(p + "/self_attn/MatMul", "MatMul", {v + "q", v + "c"}, {v + "s"}));
  g.nodes.push_back(node(p + "/self_attn/Softmax", "Softmax", {v + "s"}, {v + "p"}));
  if (extra) g.nodes.push_back(node(p + "/self_attn/Cast", "Cast", {v + "p"}, {v + "p2"}));
  g.nodes.push_back(node(p + "/Add", "Add", {x, extra ? v + "p2" : v + "p"}, {v + "y"}));
}

Graph decoder(int layers, int different = -1) {
  Graph g;
  g.inputs.push_back({"x", {}});
  g.nodes.push_back(node("/embed/Gather", "Gather", {"x"}, {"e"}));
  std::string h = "e";
  for (int k = 0; k < layers; ++k) add_layer(g, k, h, k == different), h = "l" + std::to_string(k) + "y";
  g.nodes.push_back(node("", "Identity", {h}, {"out"}));
  g.outputs.push_back({"out", {}});
  return g;
}

const Scope* find(const Scopes& s, const std::string& path) {
  for (const Scope& sc : s.groups)
    if (sc.path == path) return &sc;
  return nullptr;
}

}  // namespace

TEST_CASE("scopes: a name's scopes leave out the op part (profile::name_scopes, shared with report --by scope)") {
  CHECK(profile::name_scopes("/model/layers.3/self_attn/q_proj/MatMul") == std::vector<std::string>{"model", "layers.3", "self_attn", "q_proj"});
  CHECK(profile::name_scopes("Constant_12").empty());
  CHECK(profile::name_scopes("").empty());
  CHECK(profile::name_scopes("/MatMul").empty());
}

TEST_CASE("scopes: torch layers become nested groups, single-node groups dissolve, constants join their consumer") {
  const Graph g = decoder(2);
  const Scopes s = build_scopes(g);
  CHECK(s.groups[0].path.empty());
  const Scope* l0 = find(s, "layers.0");
  REQUIRE(l0);
  CHECK(l0->nodes.size() == 7);
  CHECK(l0->depth == 1);
  const Scope* attn = find(s, "layers.0/self_attn");
  REQUIRE(attn);
  CHECK(attn->depth == 2);
  CHECK_FALSE(find(s, "layers.0/self_attn/q_proj"));  // one node: dissolved into self_attn
  CHECK(s.node_group[4] == attn - s.groups.data());    // q_proj/MatMul
  CHECK(s.node_group[3] == attn - s.groups.data());    // Constant_10 feeds only self_attn/MatMul
  CHECK_FALSE(find(s, "embed"));                       // a single Gather
  CHECK(s.node_group[0] == 0);
  CHECK(s.node_group.back() == 0);  // the unnamed Identity stays at the root
  // Root items in topological order: Gather, layers.0, layers.1, Identity.
  const auto& items = s.groups[0].items;
  REQUIRE(items.size() == 4);
  CHECK(items[0] == 0);
  CHECK(s.groups[group_of_item(items[1])].name == "layers.0");
  CHECK(s.groups[group_of_item(items[2])].name == "layers.1");
  CHECK(items[3] == int(g.nodes.size() - 1));
  CHECK(op_summary(*l0) == "MatMul 2, Add 1, Mul 1");  // Constant left out
}

TEST_CASE("scopes: identical sibling blocks are found, a different one is not") {
  const Scopes s = build_scopes(decoder(5, /*different=*/0));
  REQUIRE(s.identical.size() == 1);
  CHECK(s.identical[0].summary == "layers.1\u20134: 4 identical blocks");
  CHECK(s.identical[0].groups.size() == 4);
  CHECK(find(s, "layers.0")->identical == -1);
  CHECK(find(s, "layers.3")->identical == 0);
  // self_attn groups are siblings of nothing alike inside their layer: no class there.
  CHECK(find(s, "layers.3/self_attn")->identical == -1);
}

TEST_CASE("scopes: a group with too many children is cut into sections in topological order") {
  ScopeOptions o;
  o.max_children = 3;
  const Graph g = decoder(3);
  const Scopes s = build_scopes(g, o);
  const Scope& root = s.groups[0];
  REQUIRE(root.items.size() == 2);  // 5 items (Gather, 3 layers, Identity): sections of 2 and 3
  const Scope& first = s.groups[group_of_item(root.items[0])];
  CHECK(first.name == "part_1_of_2");
  CHECK(first.items.size() == 2);
  CHECK(first.items[0] == 0);
  CHECK(s.groups[group_of_item(root.items[1])].items.size() == 3);
  const Scope* l0 = nullptr;
  for (const Scope& sc : s.groups)
    if (sc.name == "layers.0") l0 = &sc;
  REQUIRE(l0);
  CHECK(l0->path == "part_1_of_2/layers.0");
  CHECK(l0->depth == 2);
  CHECK(s.groups[s.node_group[1]].path == "part_1_of_2/layers.0/norm");
  CHECK(root.nodes.size() == g.nodes.size());
  CHECK(first.section);
  CHECK_FALSE(l0->section);
  // Layers 0, 1 and 2 sit in different sections but are still siblings alike.
  REQUIRE(s.identical.size() == 1);
  CHECK(s.identical[0].summary == "layers.0\u20132: 3 identical blocks");

  // With 2 per group, 5 items make 3 sections, which are cut again.
  o.max_children = 2;
  const Scopes t = build_scopes(g, o);
  size_t total = 0;
  for (const Scope& sc : t.groups) {
    CHECK(sc.items.size() <= 2);
    for (int item : sc.items) total += is_group_item(item) ? 0 : 1;
  }
  CHECK(total == g.nodes.size());  // every node in exactly one innermost group
}

TEST_CASE("scopes: a long run of scope-less nodes becomes a section, the layers stay in view") {
  Graph g = decoder(2);
  // 10 scope-less nodes (torch's mask preparation) between the Gather and the layers.
  std::vector<Node> prep;
  std::string v = "e";
  for (int k = 0; k < 10; ++k) prep.push_back(node("/Cast_" + std::to_string(k), "Cast", {v}, {"c" + std::to_string(k)})), v = "c" + std::to_string(k);
  g.nodes.insert(g.nodes.begin() + 1, prep.begin(), prep.end());
  ScopeOptions o;
  o.max_children = 6;
  const Scopes s = build_scopes(g, o);
  const Scope& root = s.groups[0];
  REQUIRE(root.items.size() == 4);  // section (Gather and the Casts), layers.0, layers.1, Identity
  const Scope& sec = s.groups[group_of_item(root.items[0])];
  CHECK(sec.name == "section_1_of_1");
  CHECK(sec.nodes.size() == 11);
  CHECK(s.groups[group_of_item(root.items[1])].path == "layers.0");
  CHECK(root.items[3] == int(g.nodes.size() - 1));
}

TEST_CASE("scopes: a run of 32 scope-less nodes before the layers is a section even under the limit") {
  Graph g = decoder(2);
  std::vector<Node> prep;
  std::string v = "e";
  for (int k = 0; k < 40; ++k) prep.push_back(node("/Cast_" + std::to_string(k), "Cast", {v}, {"c" + std::to_string(k)})), v = "c" + std::to_string(k);
  g.nodes.insert(g.nodes.begin() + 1, prep.begin(), prep.end());
  const Scopes s = build_scopes(g);  // 120 per group
  REQUIRE(s.groups[0].items.size() == 4);  // section (Gather + 40 Casts), layers.0, layers.1, Identity
  CHECK(s.groups[group_of_item(s.groups[0].items[0])].nodes.size() == 41);
  // Without subgroups nothing is wrapped.
  Graph flat;
  flat.nodes = prep;
  CHECK(build_scopes(flat).groups.size() == 1);
}

TEST_CASE("scopes: a node's namespace replaces its name's scope") {
  Graph g = decoder(1);
  std::vector<std::string> ns(g.nodes.size());
  ns[0] = "encoder/embed";
  ns[1] = "encoder: Encoder/embed: Embedding";  // torch dynamo's form: the classes are dropped
  ScopeOptions o;
  o.namespaces = &ns;
  const Scopes s = build_scopes(g, o);
  const Scope* embed = find(s, "encoder/embed");
  REQUIRE(embed);
  CHECK(embed->nodes == std::vector<size_t>{0, 1});
  CHECK(find(s, "layers.0")->nodes.size() == 6);  // its Pow moved out
}

TEST_CASE("scopes: collapse at depth 1 keeps layers as boxes with deduplicated edges") {
  const Graph g = decoder(2);
  const Scopes s = build_scopes(g);
  const CollapsedGraph c = collapse(g, s, 1);
  REQUIRE(c.boxes.size() == 4);  // Gather, layers.0, layers.1, Identity
  CHECK(c.boxes[0].group == -1);
  CHECK(s.groups[c.boxes[1].group].name == "layers.0");
  // x -> Gather; e (Gather -> layers.0, used by 3 nodes there: one edge, one value);
  // l0y -> layers.1; l1y -> Identity; out -> graph output.
  REQUIRE(c.edges.size() == 5);
  CHECK(c.edges[0].from == -1);
  CHECK(c.edges[1].from == 0);
  CHECK(c.edges[1].to == 1);
  CHECK(c.edges[1].value == "e");
  CHECK(c.edges[1].count == 1);
  CHECK(c.edges[4].to == -1);
  // At depth 2 the self_attn groups are boxes and the layers' other nodes are shown.
  const CollapsedGraph d = collapse(g, s, 2);
  int attn_boxes = 0;
  for (const auto& b : d.boxes) attn_boxes += b.group >= 0 && s.groups[b.group].name == "self_attn";
  CHECK(attn_boxes == 2);
}
