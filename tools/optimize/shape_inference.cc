#include "shape_inference.h"

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <set>

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include "refeval/error.h"
#include "refeval/model_io.h"
#include "symbolic_shapes.h"

namespace refeval::optimize {
namespace {

constexpr int64_t kKeptInitializerElements = 64;  // small ones stay: shape constants propagate

std::vector<Dim> dims_of(const onnx::TensorShapeProto& s) {
  std::vector<Dim> out;
  for (const auto& d : s.dim()) {
    Dim dim;
    if (d.has_dim_value()) dim.value = d.dim_value();
    else if (d.has_dim_param()) dim.param = d.dim_param();
    out.push_back(dim);
  }
  return out;
}

// The child's limits: ONNX's data propagation builds a shape of as many dims as a computed size
// says (2^62 from an invalid graph: a run that grows until the machine is out of memory), so the
// child gets a minute of CPU and 1 GiB above what it inherits, and dies with the parent.
void limit_child() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const rlimit cpu{60, 60};
  setrlimit(RLIMIT_CPU, &cpu);
  size_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  const rlim_t inherited = rlim_t(pages) * rlim_t(sysconf(_SC_PAGESIZE));
  const rlimit memory{inherited + (rlim_t(1) << 30), inherited + (rlim_t(1) << 30)};
  setrlimit(RLIMIT_AS, &memory);
}

// ONNX's shape inference in a forked child: libonnx 1.12 crashes on some valid models (the
// optimizer's fuzz target found segfaults in its node processing), and a crash there must cost
// the fusions that need shapes, not the process. The child writes the inferred model and the
// propagated shape data to a pipe, each length-prefixed.
bool infer_in_child(const std::string& model_bytes, std::string& inferred, std::string& shape_data) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    limit_child();
    onnx::ModelProto proto;
    std::unordered_map<std::string, onnx::TensorShapeProto> data;
    if (proto.ParseFromString(model_bytes)) {
      try {
        onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true), &data);
      } catch (const std::exception&) {
      }
    }
    onnx::GraphProto shapes;
    for (const auto& [name, shape] : data) {
      auto* v = shapes.add_value_info();
      v->set_name(name);
      *v->mutable_type()->mutable_tensor_type()->mutable_shape() = shape;
    }
    for (const std::string& part : {proto.SerializeAsString(), shapes.SerializeAsString()}) {
      const uint64_t n = part.size();
      if (write(fds[1], &n, sizeof n) != ssize_t(sizeof n)) _exit(1);
      for (size_t done = 0; done < part.size();) {
        const ssize_t w = write(fds[1], part.data() + done, part.size() - done);
        if (w <= 0) _exit(1);
        done += size_t(w);
      }
    }
    _exit(0);
  }
  close(fds[1]);
  std::string all;
  char buf[1 << 16];
  for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) > 0;) all.append(buf, size_t(r));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    spdlog::debug("shape inference failed in its child process (status {}); fusions that need shapes are skipped", status);
    return false;
  }
  size_t at = 0;
  for (std::string* part : {&inferred, &shape_data}) {
    uint64_t n = 0;
    if (all.size() < at + sizeof n) return false;
    std::memcpy(&n, all.data() + at, sizeof n);
    at += sizeof n;
    if (all.size() < at + n) return false;
    part->assign(all, at, n);
    at += n;
  }
  return true;
}

// One run of ONNX's inference and the symbolic propagation. A node with no schema leaves the
// light model; its outputs enter as inputs typed as `earlier` knew them (or as their first
// input's element type, rank unknown).
Inference infer_once(const Model& model, const Inference* earlier, std::set<std::string>& schemaless_outputs) {
  Model light = model;
  light.functions.clear();
  std::vector<Initializer> kept;
  for (const Initializer& init : light.graph.initializers) {
    if (init.value.size() <= kKeptInitializerElements) {
      kept.push_back(init);
      continue;
    }
    std::vector<Dim> dims;
    for (int64_t d : init.value.shape()) dims.push_back(Dim{d, ""});
    light.graph.inputs.push_back({init.name, ValueType::tensor(init.value.dtype(), dims)});
  }
  light.graph.initializers = kept;
  light.graph.value_info.clear();  // inferred afresh: an earlier pass may have changed a value
  // libonnx 1.12's data propagation crashes on a node it has no schema for (a com.microsoft
  // fusion, ORT's SimplifiedLayerNormalization in the default domain). Such nodes leave the light
  // model; their outputs enter it as inputs typed as before (or as their first input's type), and
  // the symbolic propagation below gives them shapes from the operator's meaning.
  std::map<std::string, DType> known;
  for (const ValueInfo& v : light.graph.inputs) known[v.name] = v.type.dtype;
  for (const Initializer& i : light.graph.initializers) known[i.name] = i.value.dtype();
  if (earlier)
    for (const auto& [name, type] : earlier->types) known.emplace(name, type.dtype);
  auto shaped_before = [&](const std::string& name) -> const ValueType* {
    if (!earlier) return nullptr;
    auto it = earlier->types.find(name);
    return it != earlier->types.end() && it->second.kind == ValueType::Kind::Tensor && it->second.has_shape ? &it->second : nullptr;
  };
  std::vector<Node> nodes;
  // Outputs of operators from other domains than ONNX's and ORT's: their element type is a guess
  // that lets ONNX's inference go on past them, not something a pass may rely on (a Cast of a
  // custom arg-max's int64 output to float is no no-op).
  std::set<std::string> guessed;
  for (Node& n : light.graph.nodes) {
    const std::string domain = n.domain == "ai.onnx" ? "" : n.domain;
    const int version = light.opsets.count(domain) ? int(light.opsets.at(domain)) : 1;
    if (onnx::OpSchemaRegistry::Schema(n.op_type, version, domain)) {
      nodes.push_back(std::move(n));
      continue;
    }
    DType dtype = DType::Float;
    if (!n.inputs.empty())
      if (auto it = known.find(n.inputs[0]); it != known.end() && it->second != DType::Undefined) dtype = it->second;
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      schemaless_outputs.insert(out);
      auto it = known.find(out);
      const bool typed = it != known.end() && it->second != DType::Undefined;
      const DType t = typed ? it->second : dtype;
      if (!typed && domain != "" && domain != "com.microsoft") guessed.insert(out);
      const ValueType* before = shaped_before(out);
      light.graph.inputs.push_back({out, before && before->dtype == t ? *before : ValueType::tensor_of_unknown_rank(t)});
      known[out] = t;
    }
  }
  light.graph.nodes = std::move(nodes);

  Inference out;
  std::string inferred_bytes, shape_bytes;
  if (!infer_in_child(serialize_model(light), inferred_bytes, shape_bytes)) {
    refine_symbolic_shapes(model, out);  // what the declared inputs and initializers alone tell
    return out;
  }
  onnx::GraphProto shapes;  // shape data: value infos whose tensor shape holds a value's elements
  shapes.ParseFromString(shape_bytes);
  std::unordered_map<std::string, onnx::TensorShapeProto> shape_data;
  for (const auto& v : shapes.value_info()) shape_data[v.name()] = v.type().tensor_type().shape();
  Model inferred;
  try {
    inferred = parse_model(inferred_bytes, model.base_dir, "inferred model");
  } catch (const Error&) {
    return out;
  }
  for (const auto* list : {&inferred.graph.inputs, &inferred.graph.value_info, &inferred.graph.outputs})
    for (const ValueInfo& v : *list)
      if (v.type.kind != ValueType::Kind::Unknown && !guessed.count(v.name)) out.types[v.name] = v.type;
  for (const Initializer& init : model.graph.initializers) {
    std::vector<Dim> dims;
    for (int64_t d : init.value.shape()) dims.push_back(Dim{d, ""});
    out.types[init.name] = ValueType::tensor(init.value.dtype(), dims);
  }
  for (const auto& [name, shape] : shape_data) out.shape_data[name] = dims_of(shape);
  refine_symbolic_shapes(model, out);
  return out;
}

// The schema-less outputs whose shape `inference` knows and `fed` did not.
size_t newly_shaped(const std::set<std::string>& outputs, const Inference& inference, const Inference* fed) {
  size_t n = 0;
  for (const std::string& name : outputs) {
    auto now = inference.types.find(name);
    if (now == inference.types.end() || !now->second.has_shape) continue;
    auto then = fed ? fed->types.find(name) : decltype(now){};
    if (!fed || then == fed->types.end() || !then->second.has_shape) ++n;
  }
  return n;
}

}  // namespace

// A com.microsoft node (a Gelu fused before a Conv) would hide the shapes of everything after it
// from ONNX's inference, and with them every later fusion's candidates there. The symbolic
// propagation gives its outputs shapes from the operator's meaning; ONNX's inference then runs
// again with those outputs typed, until no schema-less output gains a shape (a chain of fused
// nodes gains one link a round).
Inference infer(const Model& model, const Inference* earlier) {
  constexpr int kMaxRounds = 8;
  std::set<std::string> schemaless;
  Inference out = infer_once(model, earlier, schemaless);
  Inference fed;
  for (int round = 1; round < kMaxRounds && newly_shaped(schemaless, out, round == 1 ? earlier : &fed) > 0; ++round) {
    Inference known = out;
    for (const auto& [name, type] : (round == 1 && earlier ? earlier->types : fed.types)) known.types.emplace(name, type);
    fed = std::move(known);
    schemaless.clear();
    out = infer_once(model, &fed, schemaless);
  }
  return out;
}

}  // namespace refeval::optimize
