// --target ort --forms cpu: a residual Add read only by a LayerNormalization becomes Sum. ONNX
// Runtime's session optimizer fuses Add + LayerNormalization into com.microsoft
// SkipLayerNormalization, whose CPU kernel runs slower than the two nodes it replaces; it matches
// an Add only, so the same sum written as Sum (of the same two inputs, broadcasting alike) keeps
// ORT on its faster LayerNormalization (ort_cpu_forms.h: 0.18x of the fused form at one thread,
// 0.39x at two). The value computed is the same.
#include "../pass.h"

namespace refeval::optimize {

Pass residual_sum_pass() {
  return {"residual-sum", "Wrote residual Add as Sum", Level::Extended, [](Model& m, PassContext& ctx) {
            Graph& g = m.graph;
            const GraphIndex index(g, ctx.inference);
            int written = 0;
            for (Node& n : g.nodes) {
              if (n.op_type != "Add" || !n.domain.empty() || n.inputs.size() != 2 || index.is_graph_output(n.outputs[0])) continue;
              // a residual: two computed values (a bias Add has a constant)
              if (index.constant(n.inputs[0]) || index.constant(n.inputs[1])) continue;
              const std::vector<int>& readers = index.consumers(n.outputs[0]);
              if (readers.size() != 1) continue;
              const Node& norm = g.nodes[size_t(readers[0])];
              if (norm.op_type != "LayerNormalization" || !norm.domain.empty() || norm.inputs[0] != n.outputs[0]) continue;
              n.op_type = "Sum";
              ++written;
            }
            return written;
          }};
}

}  // namespace refeval::optimize
