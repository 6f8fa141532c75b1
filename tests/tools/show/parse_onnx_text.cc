// Parses ONNX textual syntax with Debian's libonnx (1.12) parser and prints what it read, so
// tests can check that `refeval show` text reads back: "nodes N initializers I inputs A outputs B
// ops Op1,Op2,...". Exit 1 with the parser's message when it does not parse.
// usage: parse_onnx_text FILE.txt
#include <onnx/defs/parser.h>

#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: parse_onnx_text FILE.txt\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, text.str().c_str());
  if (!status.IsOK()) {
    std::cerr << status.ErrorMessage() << "\n";
    return 1;
  }
  const auto& g = model.graph();
  std::cout << "nodes " << g.node_size() << " initializers " << g.initializer_size() << " inputs " << g.input_size() << " outputs "
            << g.output_size() << " ops";
  for (int i = 0; i < g.node_size(); ++i) std::cout << (i ? "," : " ") << g.node(i).op_type();
  std::cout << "\n";
  return 0;
}
