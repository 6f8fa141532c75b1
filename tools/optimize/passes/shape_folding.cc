// Shape folding: a value computed from shapes (Shape, Gather of a Shape, Concat of dims...)
// whose every element ONNX shape inference knows as a number becomes a constant, so the nodes
// computing it fold away: e.g. Gather(Shape(x), 2) when x's last dimension is fixed at 768. Only
// int64 tensors of rank 0 or 1 whose inferred shape matches the propagated data.
#include "../pass.h"

namespace refeval::optimize {

Pass shape_folding_pass() {
  return {"shape-folding", "Folded shape value", Level::Basic, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            std::vector<bool> drop(g.nodes.size(), false);
            int folded = 0;
            for (size_t i = 0; i < g.nodes.size(); ++i) {
              const Node& n = g.nodes[i];
              if (n.outputs.size() != 1 || n.outputs[0].empty() || index.constant(n.outputs[0])) continue;
              const std::string& out = n.outputs[0];
              const std::vector<Dim>* data = index.shape_data(out);
              const ValueType* type = index.type(out);
              if (!data || !type || type->kind != ValueType::Kind::Tensor || type->dtype != DType::Int64 || !type->has_shape)
                continue;
              const size_t rank = type->dims.size();
              if (rank > 1 || (rank == 0 && data->size() != 1) ||
                  (rank == 1 && (!type->dims[0].fixed() || size_t(type->dims[0].value) != data->size())))
                continue;
              std::vector<int64_t> values;
              for (const Dim& d : *data)
                if (d.fixed()) values.push_back(d.value);
              if (values.size() != data->size()) continue;
              const Shape shape = rank == 0 ? Shape{} : Shape{int64_t(values.size())};
              g.initializers.push_back({out, Tensor::from_vector<int64_t>(shape, values)});
              drop[i] = true, ++folded;
            }
            drop_nodes(g, drop);
            return folded;
          }};
}

}  // namespace refeval::optimize
