// `refeval debug MODEL`: step through a model in the terminal (README, "Debugging a model").
// Commands come from the terminal (libedit editing and history), a pipe, or --commands FILE.
#include <unistd.h>

#include "debug/repl.h"
#include "refeval/model_io.h"
#include "verbs.h"

namespace refeval::cli {
namespace {

class DebugVerb : public Verb {
 public:
  void setup(CLI::App* sub) override {
    sub->add_option("model", model_, "the .onnx model")->required();
    inputs_.add_to(sub);
    sub->add_option("--commands", commands_, "FILE: read the commands from FILE (the session ends with the file)");
  }

  int execute(const GlobalOptions& g) override {
    ReferenceEvaluator ev(open_model(model_), {&registry(g)});
    auto feeds = make_feeds(ev, inputs_);
    auto reader = !commands_.empty() ? make_file_reader(commands_) : isatty(STDIN_FILENO) ? make_terminal_reader() : make_stdin_reader();
    Repl repl(ev, std::move(feeds), *reader);
    return repl.session();
  }

 private:
  std::string model_;
  InputOptions inputs_;
  std::string commands_;
};

}  // namespace

std::unique_ptr<Verb> make_debug_verb() { return std::make_unique<DebugVerb>(); }

}  // namespace refeval::cli
