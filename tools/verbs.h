// The verbs of the refeval command line. Each verb file defines one of these: `setup` declares
// its options on its CLI11 subcommand, `execute` runs it and returns the exit code.
#pragma once

#include <memory>
#include <vector>

#include "cli_common.h"

namespace refeval::cli {

class Verb {
 public:
  virtual ~Verb() = default;
  virtual void setup(CLI::App* sub) = 0;
  virtual int execute(const GlobalOptions& g) = 0;
};

std::unique_ptr<Verb> make_run_verb();
std::unique_ptr<Verb> make_ops_verb();
std::unique_ptr<Verb> make_test_verb();
std::unique_ptr<Verb> make_node_verb();
std::unique_ptr<Verb> make_compare_verb();
std::unique_ptr<Verb> make_debug_verb();
std::unique_ptr<Verb> make_check_fusion_verb();
std::unique_ptr<Verb> make_profile_verb();
std::unique_ptr<Verb> make_report_verb();
std::unique_ptr<Verb> make_optimize_verb();
std::unique_ptr<Verb> make_show_verb();
std::unique_ptr<Verb> make_generate_verb();
std::unique_ptr<Verb> make_reduce_verb();
std::unique_ptr<Verb> make_accuracy_verb();
std::unique_ptr<Verb> make_tokenize_verb();
std::unique_ptr<Verb> make_quantize_verb();

}  // namespace refeval::cli
