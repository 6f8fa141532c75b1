// BERT's embedding layer (ORT's FusionEmbedLayerNormalization): the sum of two or three table
// lookups normalised over the hidden axis,
//
//   LayerNormalization(word[input_ids] + position[position_ids] (+ segment[token_type_ids]))
//   (or SkipLayerNormalization(a, b, ...) of two of the sums, as skip-layer-norm left it)
//   -> com.microsoft EmbedLayerNormalization(input_ids, segment_ids, word, position, segment,
//                                            gamma, beta, , position_ids)
//
// read by meaning: each term is Gather(constant (V, H) table, indices) on axis 0; the word table
// is the one indexed by a graph input, the biggest such; of the others the smaller table is the
// segment (type vocabulary) and the bigger the position; a segment lookup of zeros (no token
// types given) is folded into the position table. Positions that are provably 0..S-1 (a
// constant arange sliced from 0, or Range(0, S, 1), broadcast) are left to the operator's default;
// other position indices (RoBERTa's cumsum of the padding mask, an input) are passed as
// position_ids. Ids are cast to int32, the operator's type.
//
// No mask is given to the operator: its mask_index output counts each row's ones, which a fused
// Attention reads as "the first n keys" (right padding only, ORT's MaskIndexEnd). The attention
// pass gives Attention the raw (B, T) mask instead, which is exact for any padding.
#include <fmt/format.h>

#include "../pass.h"
#include "refeval/builder.h"
#include "refeval/compute_vector.h"
#include "../symbolic_shapes.h"

namespace refeval::optimize {
namespace {

struct Lookup {
  int gather = -1;  // the Gather, or the Slice of a sliced table
  std::string table, indices;
  int64_t rows = 0;
  bool sliced = false;  // rows [0, n) of the table (tf2onnx's position embeddings): positions 0..n-1
};

// Slice(table, 0, end) on axis 0, step 1: the first rows of a 2-D constant.
bool first_rows(const GraphIndex& g, const Node& n) {
  if (n.op_type != "Slice" || n.inputs.size() < 3 || !g.constant(n.inputs[0]) || g.constant(n.inputs[0])->rank() != 2) return false;
  const auto starts = g.ints(n.inputs[1]);
  const auto axes = n.inputs.size() > 3 && !n.inputs[3].empty() ? g.ints(n.inputs[3]) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{0});
  const auto steps = n.inputs.size() > 4 && !n.inputs[4].empty() ? g.ints(n.inputs[4]) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
  return starts == std::vector<int64_t>{0} && (axes == std::vector<int64_t>{0} || axes == std::vector<int64_t>{-2}) && steps == std::vector<int64_t>{1};
}

bool is_feed(const GraphIndex& g, std::string v) {
  for (int steps = 0; steps < 3; ++steps) {
    for (const ValueInfo* in : g.graph().feed_inputs())
      if (in->name == v) return true;
    const int p = g.producer(v);
    if (p < 0 || g.graph().nodes[size_t(p)].op_type != "Cast") return false;
    v = g.graph().nodes[size_t(p)].inputs[0];
  }
  return false;
}

// The value behind Casts.
std::string uncast(const GraphIndex& g, std::string v) {
  for (int p; (p = g.producer(v)) >= 0 && g.graph().nodes[size_t(p)].op_type == "Cast";) v = g.graph().nodes[size_t(p)].inputs[0];
  return v;
}

// True when `indices` are 0, 1, ..., S-1 along their last axis with S = ids' sequence length:
// a constant arange sliced [0, S) on its last axis, or Range(0, S, 1), maybe unsqueezed and
// expanded over the batch. Every value on the way has the last axis S long: an Expand of a
// shorter one would repeat its values (position 0 broadcast over the sequence).
bool positions_are_arange(const GraphIndex& g, std::string indices, const std::string& ids) {
  const std::vector<Dim>* id = g.dims(ids);
  if (!id || id->size() != 2) return false;
  for (int steps = 0; steps < 6; ++steps) {
    const std::vector<Dim>* pd = g.dims(indices);
    if (!pd || pd->empty() || !dims_equal(pd->back(), (*id)[1], g.inference())) return false;
    indices = uncast(g, indices);
    if (const Tensor* c = g.constant(indices)) {  // fixed shapes: the slice folded
      const std::vector<int64_t> v = g.ints(indices).value_or(std::vector<int64_t>{});
      const int64_t S = c->rank() ? c->dim(c->rank() - 1) : 0;
      if (v.empty() || S == 0) return false;
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != int64_t(i) % S) return false;
      return true;
    }
    const int p = g.producer(indices);
    if (p < 0) return false;
    const Node& n = g.graph().nodes[size_t(p)];
    if (n.op_type == "Unsqueeze" || n.op_type == "Expand") {
      indices = n.inputs[0];
    } else if (n.op_type == "Range" && n.inputs.size() == 3) {
      return g.scalar(n.inputs[0]) == 0.0 && g.scalar(n.inputs[2]) == 1.0;  // its length is S, checked above
    } else if (n.op_type == "Slice" && n.inputs.size() >= 3) {
      const Tensor* buffer = g.constant(uncast(g, n.inputs[0]));
      const auto starts = g.ints(n.inputs[1]);
      const auto axes = n.inputs.size() > 3 && !n.inputs[3].empty() ? g.ints(n.inputs[3]) : std::optional<std::vector<int64_t>>{};
      const auto steps_v = n.inputs.size() > 4 && !n.inputs[4].empty() ? g.ints(n.inputs[4]) : std::optional<std::vector<int64_t>>{};
      if (!buffer || buffer->rank() < 1 || !starts || starts->size() != 1 || (*starts)[0] != 0) return false;
      if (axes && !(axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == int64_t(buffer->rank()) - 1))) return false;
      if (!axes && buffer->rank() != 1) return false;
      if (steps_v && *steps_v != std::vector<int64_t>{1}) return false;
      const std::vector<int64_t> v = g.ints(uncast(g, n.inputs[0])).value_or(std::vector<int64_t>{});
      if (v.empty() || int64_t(v.size()) != buffer->dim(buffer->rank() - 1)) return false;  // one row of 0..P-1
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] != int64_t(i)) return false;
      return true;
    } else {
      return false;
    }
  }
  return false;
}

// True when `indices` are zeros whatever the input: a constant of zeros or ConstantOfShape(0),
// sliced, expanded or cast (HF's buffered token_type_ids when none are given).
bool all_zeros(const GraphIndex& g, std::string indices) {
  for (int steps = 0; steps < 8; ++steps) {
    if (const auto v = g.ints(indices)) return std::all_of(v->begin(), v->end(), [](int64_t x) { return x == 0; });
    const int p = g.producer(indices);
    if (p < 0) return false;
    const Node& n = g.graph().nodes[size_t(p)];
    if (n.op_type == "ConstantOfShape") {
      const Attribute* a = n.find_attribute("value");
      return !a || scalar_of(a->t) == 0.0;
    }
    if (n.inputs.empty() || !(n.op_type == "Cast" || n.op_type == "Expand" || n.op_type == "Unsqueeze" || n.op_type == "Slice" || n.op_type == "Reshape"))
      return false;
    indices = n.inputs[0];
  }
  return false;
}

}  // namespace

Pass embed_layer_norm_pass() {
  return {"embed-layer-norm", "Fused EmbedLayerNormalization", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            NameGen names(g);
            int candidates = 0, fused = 0;
            std::vector<bool> drop(g.nodes.size(), false);
            std::map<int, Node> replace;  // the norm's index -> the fused node
            std::vector<Node> casts;
            std::vector<Provenance> provenance;
            std::map<std::string, std::string> cast_of;  // ids -> their int32 cast, shared
            auto int32 = [&](const std::string& v) {
              if (const ValueType* t = index.type(v); t && t->kind == ValueType::Kind::Tensor && t->dtype == DType::Int32) return v;
              if (auto it = cast_of.find(v); it != cast_of.end()) return it->second;
              const std::string out = names.value(v + "_int32");
              casts.push_back(make_node("Cast", "", {v}, {out}, {build::attr("to", int64_t(DType::Int32))}, names.node("/embeddings/Cast_" + v)));
              return cast_of[v] = out;
            };
            for (int li = 0; li < int(g.nodes.size()); ++li) {
              const Node& ln = g.nodes[size_t(li)];
              const bool skip = ln.op_type == "SkipLayerNormalization" && ln.domain == "com.microsoft";
              if (!(ln.op_type == "LayerNormalization" && ln.domain.empty()) && !skip) continue;
              // The terms of the sum: Gathers, through Adds read only here.
              std::vector<std::string> todo = skip ? std::vector<std::string>{ln.inputs[0], ln.inputs[1]} : std::vector<std::string>{ln.inputs[0]};
              std::vector<Lookup> terms;
              std::set<int> adds;
              bool gathers = true;
              while (!todo.empty() && gathers) {
                const std::string v = todo.back();
                todo.pop_back();
                const int p = index.producer(v);
                const Node* n = p < 0 ? nullptr : &g.nodes[size_t(p)];
                if (n && n->op_type == "Add" && n->inputs.size() == 2 && index.consumers(v).size() == 1 && !index.is_graph_output(v)) {
                  adds.insert(p), todo.push_back(n->inputs[0]), todo.push_back(n->inputs[1]);
                } else if (n && n->op_type == "Gather" && n->inputs.size() == 2 && int_attr(*n, "axis", 0) == 0 && index.constant(n->inputs[0]) &&
                           index.constant(n->inputs[0])->rank() == 2 && index.consumers(v).size() == 1 && !index.is_graph_output(v)) {
                  terms.push_back({p, n->inputs[0], n->inputs[1], index.constant(n->inputs[0])->dim(0)});
                } else if (n && first_rows(index, *n) && index.consumers(v).size() == 1 && !index.is_graph_output(v)) {
                  terms.push_back({p, n->inputs[0], v, index.constant(n->inputs[0])->dim(0), true});
                } else {
                  gathers = false;
                }
              }
              if (!gathers || terms.size() < 2) continue;  // not an embedding sum: no candidate
              ++candidates;
              auto refuse = [&](const std::string& why) {
                if (ctx.explain) ctx.explain->add("embed-layer-norm", ln.name.empty() ? ln.outputs[0] : ln.name, why);
              };
              if (terms.size() > 3) {
                refuse(fmt::format("{} table lookups are summed, more than word, position and segment", terms.size()));
                continue;
              }
              // The word table: indexed by a graph input, the biggest such.
              int word = -1;
              for (int i = 0; i < int(terms.size()); ++i)
                if (!terms[size_t(i)].sliced && is_feed(index, terms[size_t(i)].indices) && (word < 0 || terms[size_t(i)].rows > terms[size_t(word)].rows)) word = i;
              if (word < 0) {
                refuse("no lookup is indexed by a graph input (the token ids)");
                continue;
              }
              const Lookup w = terms[size_t(word)];
              terms.erase(terms.begin() + word);
              std::sort(terms.begin(), terms.end(), [](const Lookup& a, const Lookup& b) { return a.rows > b.rows; });
              // A sliced table is the positions whatever its size.
              std::stable_partition(terms.begin(), terms.end(), [](const Lookup& t) { return t.sliced; });
              const Lookup pos = terms[0];
              if (terms.size() > 1 && terms[1].sliced) {
                refuse("two sliced tables");
                continue;
              }
              std::optional<Lookup> seg = terms.size() > 1 ? std::optional<Lookup>(terms[1]) : std::nullopt;
              // A segment lookup of zeros adds its row 0 everywhere: folded into the position
              // table (one rounding, p + t, where the export rounds (w + t) + p).
              std::string position_table = pos.table;
              std::optional<Lookup> folded;
              if (seg && all_zeros(index, seg->indices)) folded = seg, seg.reset();
              const std::vector<Dim>* ids_dims = index.dims(w.indices);
              const int64_t H = index.constant(w.table)->dim(1);
              const Tensor* wt = index.constant(w.table);
              bool tables_fit = wt->dtype() == DType::Float || wt->dtype() == DType::Float16;
              for (const Lookup* t : std::initializer_list<const Lookup*>{&pos, seg ? &*seg : nullptr, folded ? &*folded : nullptr})
                if (t) tables_fit = tables_fit && index.constant(t->table)->dim(1) == H && index.constant(t->table)->dtype() == wt->dtype();
              if (!tables_fit) {
                refuse("the tables differ in width or type, or are not float32/float16");
                continue;
              }
              if (!ids_dims || ids_dims->size() != 2) {
                refuse(fmt::format("the token ids '{}' are not known to be (B, S)", w.indices));
                continue;
              }
              const std::vector<Dim>* sd = seg ? index.dims(seg->indices) : nullptr;
              if (seg && (!sd || !same_shape(*sd, *ids_dims))) {
                refuse(fmt::format("the segment ids '{}' are not known to have the token ids' shape", seg->indices));
                continue;
              }
              const std::vector<Dim>* pd = index.dims(pos.indices);
              // A sliced table's rows [0, S) of the ids' S, or a lookup of 0..S-1.
              const bool arange = pos.sliced ? pd && pd->size() == 2 && dims_equal((*pd)[0], (*ids_dims)[1], ctx.inference)
                                             : positions_are_arange(index, pos.indices, w.indices);
              if (pos.sliced && !arange) {
                refuse(fmt::format("the position rows '{}' are not known to be as many as the tokens", pos.indices));
                continue;
              }
              if (!arange && (!pd || pd->size() != 2 || !dims_equal(pd->back(), (*ids_dims)[1], ctx.inference) ||
                              !(same_dim((*pd)[0], (*ids_dims)[0]) || ((*pd)[0].fixed() && (*pd)[0].value == 1)))) {
                refuse(fmt::format("the position ids '{}' are not (B, S) or (1, S) of the token ids' S", pos.indices));
                continue;
              }
              // gamma and beta, 1-D constants over H; the norm over the last axis.
              const size_t g_at = skip ? 2 : 1, b_at = skip ? 3 : 2;
              const Tensor* gamma = ln.inputs.size() > g_at ? index.constant(ln.inputs[g_at]) : nullptr;
              const Tensor* beta = ln.inputs.size() > b_at && !ln.inputs[b_at].empty() ? index.constant(ln.inputs[b_at]) : nullptr;
              const int64_t axis = int_attr(ln, "axis", -1);
              if (!gamma || gamma->rank() != 1 || gamma->dim(0) != H || (ln.inputs.size() > b_at && !ln.inputs[b_at].empty() && (!beta || beta->rank() != 1 || beta->dim(0) != H))) {
                refuse("gamma or beta is not a 1-D constant over the hidden size");
                continue;
              }
              if (!skip && axis != -1 && axis != 2) {
                refuse(fmt::format("the norm starts at axis {}, not the hidden axis", axis));
                continue;
              }
              if (skip && ln.inputs.size() > 4 && !ln.inputs[4].empty()) {
                refuse("the SkipLayerNormalization also adds a bias");
                continue;
              }
              bool stats_read = false;
              for (size_t o = 1; o < ln.outputs.size(); ++o) stats_read = stats_read || (!ln.outputs[o].empty() && index.is_used(ln.outputs[o]));
              if (stats_read) {
                refuse("the norm's statistics or sum outputs are read");
                continue;
              }
              std::string beta_name = beta ? ln.inputs[b_at] : "";
              if (!beta) {
                beta_name = names.value(ln.inputs[g_at] + "_zero_beta");
                m.graph.initializers.push_back({beta_name, from_doubles(gamma->dtype(), {H}, std::vector<double>(size_t(H), 0.0))});
              }
              if (folded) {
                const Tensor& pt = *index.constant(pos.table);
                std::vector<double> table = to_doubles(pt);
                const std::vector<double> row = to_doubles(*index.constant(folded->table));
                for (size_t i = 0; i < table.size(); ++i) table[i] += row[i % size_t(H)];
                position_table = names.value(pos.table + "_with_segment_0");
                m.graph.initializers.push_back({position_table, from_doubles(pt.dtype(), pt.shape(), table)});
              }
              std::vector<std::string> inputs = {int32(w.indices), seg ? int32(seg->indices) : "", w.table, position_table, seg ? seg->table : "",
                                                 ln.inputs[g_at], beta_name, "", arange ? "" : int32(pos.indices)};
              while (inputs.back().empty()) inputs.pop_back();
              const std::string name = names.node("/embeddings/EmbedLayerNormalization");
              // mask_index is a required output (ORT's schema), unread here.
              replace[li] = make_node("EmbedLayerNormalization", "com.microsoft", inputs, {ln.outputs[0], names.value(name + "/mask_index")},
                                      {build::attr("epsilon", float_attr(ln, "epsilon", skip ? 1e-12f : 1e-5f))}, name);
              Provenance prov;
              prov.replaced.push_back(ln.name);
              for (int a : adds) drop[size_t(a)] = true, prov.replaced.push_back(g.nodes[size_t(a)].name);
              drop[size_t(w.gather)] = drop[size_t(pos.gather)] = true;
              prov.replaced.push_back(g.nodes[size_t(w.gather)].name), prov.replaced.push_back(g.nodes[size_t(pos.gather)].name);
              for (const std::optional<Lookup>& t : {seg, folded})
                if (t) drop[size_t(t->gather)] = true, prov.replaced.push_back(g.nodes[size_t(t->gather)].name);
              prov.created.push_back(name);
              provenance.push_back(std::move(prov));
              ++fused;
            }
            if (ctx.explain) ctx.explain->count("embed-layer-norm", candidates, fused);
            if (!fused) return 0;
            std::vector<Node> out;
            for (Node& c : casts) out.push_back(std::move(c));
            for (int i = 0; i < int(g.nodes.size()); ++i) {
              if (auto it = replace.find(i); it != replace.end()) out.push_back(std::move(it->second));
              else if (!drop[size_t(i)]) out.push_back(std::move(g.nodes[size_t(i)]));
            }
            g.nodes = std::move(out);
            record_provenance(m, provenance);
            topological_sort(g);  // the casts went first; remove_dead sweeps in graph order
            remove_dead(g);
            return fused;
          }};
}

}  // namespace refeval::optimize
