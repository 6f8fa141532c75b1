// Reshape fusion (ORT's FusionReshape, done from shape inference instead of a fixed pattern): a
// Reshape whose target shape is computed at run time (Shape -> Gather -> Unsqueeze -> Concat of
// the input's own dims) gets a constant target when ONNX's data propagation knows every element
// of it: a fixed size stays, a symbolic dim equal to the input's dim at the same position becomes
// 0 ("copy", allowzero=0), and at most one other element becomes -1 (exact: it is then the only
// one left to infer). The shape computation is left for the dead-code pass.
#include "../pass.h"

namespace refeval::optimize {

Pass reshape_fusion_pass() {
  return {"reshape-fusion", "Fused Reshape shape", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            NameGen names(g);
            int fused = 0;
            std::vector<Initializer> added;
            for (Node& n : g.nodes) {
              if (n.op_type != "Reshape" || !n.domain.empty() || n.inputs.size() != 2 || int_attr(n, "allowzero", 0) != 0) continue;
              if (index.constant(n.inputs[1])) continue;
              const std::vector<Dim>* target = index.shape_data(n.inputs[1]);
              const std::vector<Dim>* in = index.dims(n.inputs[0]);
              if (!target || !in) continue;
              std::vector<int64_t> shape;
              bool inferred = false, ok = true;
              for (size_t i = 0; i < target->size() && ok; ++i) {
                const Dim& d = (*target)[i];
                if (d.fixed()) {
                  ok = d.value > 0;  // a literal 0 would mean "copy" here
                  shape.push_back(d.value);
                } else if (i < in->size() && same_dim(d, (*in)[i])) {
                  shape.push_back(0);
                } else if (!inferred) {
                  shape.push_back(-1), inferred = true;
                } else {
                  ok = false;
                }
              }
              if (!ok) continue;
              const std::string name = names.value(n.inputs[1] + "_fused");
              added.push_back({name, Tensor::from_vector<int64_t>({int64_t(shape.size())}, shape)});
              n.inputs[1] = name;
              ++fused;
            }
            for (Initializer& i : added) g.initializers.push_back(std::move(i));
            return fused;
          }};
}

}  // namespace refeval::optimize
