// The operator registry: (domain, op type, since-version) -> factory. Built-in operator families
// and user operators register the same way, one line per operator:
//
//   void register_activations(refeval::Registry& reg) {
//     reg.add("", "Relu", {6, 13, 14}, refeval::make<Relu>);
//   }
//
// Resolution picks the highest since-version <= the model's opset for the node's domain. A user
// registry layered over the built-ins joins that choice and wins ties; an operator registered
// with add_any_version() replaces the built-in at every opset (like Python's `new_ops`).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "refeval/dispatch.h"
#include "refeval/op_run.h"

namespace refeval {

struct OpFactory {
  std::function<std::unique_ptr<OpRun>(const NodeContext&)> create;
  std::vector<DType> types;  // element types the op accepts, for `refeval ops`; empty: not declared
  Determinism determinism = Determinism::Unknown;
};

namespace detail {
template <class Op, class = void> struct DeclaredTypes { static std::vector<DType> get() { return {}; } };
template <class Op> struct DeclaredTypes<Op, std::void_t<typename Op::Types>> {
  static std::vector<DType> get() { return Op::Types::dtypes(); }
};
template <class Op, class = void> struct DeclaredDeterminism { static constexpr Determinism value = Determinism::Unknown; };
template <class Op> struct DeclaredDeterminism<Op, std::void_t<decltype(Op::determinism)>> {
  static constexpr Determinism value = Op::determinism;
};
}  // namespace detail

// make<Op>: the factory of an OpRun subclass constructible from a NodeContext. If Op declares
// `using Types = <TypeList>;` those element types are advertised; if it declares
// `static constexpr Determinism determinism = ...;` that is its determinism (see op_run.h).
template <class Op>
inline const OpFactory make{
    [](const NodeContext& ctx) -> std::unique_ptr<OpRun> { return std::make_unique<Op>(ctx); },
    detail::DeclaredTypes<Op>::get(), detail::DeclaredDeterminism<Op>::value};

struct OpRegistration {
  std::string domain;
  std::string op_type;
  int since_version = 1;  // 0 with any_version
  bool any_version = false;
  OpFactory factory;
  std::string origin;  // "builtin", or the plugin / user that added it
  // The factory's declaration, with Unknown read as Deterministic for built-in operators (each
  // random one declares Random) and left Unknown, never folded, for user and plugin operators.
  Determinism determinism = Determinism::Unknown;
};

class Registry {
 public:
  // A registry whose lookups fall back to `parent` (usually the built-ins).
  explicit Registry(const Registry* parent = nullptr, std::string origin = "user");

  void add(const std::string& domain, const std::string& op_type, std::initializer_list<int> since_versions,
           const OpFactory& factory);
  void add_any_version(const std::string& domain, const std::string& op_type, const OpFactory& factory);

  // The implementation for an opset, or null when none applies.
  const OpRegistration* resolve(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Every registration visible through this registry (own ones first), for listings.
  std::vector<const OpRegistration*> list() const;
  // Since-versions registered for an op (all layers), for error messages.
  std::vector<int> versions_of(const std::string& domain, const std::string& op_type) const;

  // The registry of every built-in operator, built once on first use.
  static const Registry& builtin();

 private:
  void add_entry(const std::string& domain, const std::string& op_type, int since_version, bool any_version,
                 const OpFactory& factory);
  const Registry* parent_;
  std::string origin_;
  std::vector<std::unique_ptr<OpRegistration>> entries_;
};

}  // namespace refeval
