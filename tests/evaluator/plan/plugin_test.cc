// Plugins loaded at run time (refeval/plugin.h): the example library registers its operator, a
// library built for another API version is refused with a message saying which, and a plugin
// can replace a built-in operator at every opset.
#include "refeval/plugin.h"
#include "test_util.h"
#include "tools/fusion/fusion_models.h"

using namespace refeval;
using refeval::testing::tensor;

TEST_CASE("the example plugin registers MyFusedGelu as a plugin operator") {
  Registry reg(&Registry::builtin(), "plugin");
  load_plugin(reg, REFEVAL_EXAMPLE_PLUGIN);
  const OpRegistration* op = reg.resolve("example.fused", "MyFusedGelu", 1);
  REQUIRE(op != nullptr);
  CHECK(op->origin == "plugin");
  CHECK(op->factory.types.size() == 4);  // Floats: float, double, float16, bfloat16
}

TEST_CASE("a plugin built for another API version is refused, naming both versions") {
  Registry reg(&Registry::builtin(), "plugin");
  CHECK_THROWS_WITH_AS(load_plugin(reg, REFEVAL_FUTURE_PLUGIN),
                       doctest::Contains("was built for plugin API version 3, but this refeval provides version 2"), Error);
  CHECK(reg.list().size() == Registry::builtin().list().size());  // it registered nothing
}

TEST_CASE("a plugin whose registration fails is a usage error naming it and its status") {
  Registry reg(&Registry::builtin(), "plugin");
  CHECK_THROWS_WITH_AS(load_plugin(reg, REFEVAL_FAILING_PLUGIN),
                       doctest::Contains("refeval_test_failing_register.so' failed to register its operators (status -3)"), Error);
}

TEST_CASE("a missing library or one without the entry point is a usage error naming it") {
  Registry reg(&Registry::builtin(), "plugin");
  try {
    load_plugin(reg, "/nonexistent/libnothing.so");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Usage);
    CHECK(std::string(e.what()).find("cannot load custom-op library '/nonexistent/libnothing.so'") != std::string::npos);
  }
}

TEST_CASE("a plugin that overrides Relu with add_any_version is used at every opset") {
  Registry reg(&Registry::builtin(), "plugin");
  load_plugin(reg, REFEVAL_RELU_PLUGIN);
  for (int64_t opset : {6, 13, 14, 21}) {
    CAPTURE(opset);
    ReferenceEvaluator ev(refeval::testing::relu_model(opset), {&reg});
    const Values y = ev.run({}, {{"X", tensor<float>({1, 4}, {-2, -0.5f, 0, 3})}});
    refeval::testing::check_equal(y[0], tensor<float>({1, 4}, {-1, -1, 0, 3}));  // the plugin's marked Relu
    ReferenceEvaluator builtin(refeval::testing::relu_model(opset));
    refeval::testing::check_equal(builtin.run({}, {{"X", tensor<float>({1, 4}, {-2, -0.5f, 0, 3})}})[0],
                                  tensor<float>({1, 4}, {0, 0, 0, 3}));
  }
}
