// One error type for the whole library. It carries the context a user needs to find the problem
// (file, graph, node and op type, tensor) and a kind that the CLI maps to its exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace refeval {

enum class ErrorKind {
  Usage,   // bad option or argument (exit 2)
  Model,   // unreadable or invalid model (exit 2)
  Input,   // missing or mismatched feed, unreadable input file (exit 2)
  Runtime, // an operator failed while running (exit 1)
  Resource, // a resource limit: a tensor beyond the memory cap or beyond 64-bit sizes (exit 2)
};

class Error : public std::runtime_error {
 public:
  // Out of line (evaluator/values/error.cc): with REFEVAL_ERROR_LOG set, every message is also
  // appended to that file, so a script can tell which of the library's messages tests produce.
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }
 private:
  ErrorKind kind_;
};

// Shorthands; the message should already name the node and tensor where they apply.
[[noreturn]] inline void fail_model(const std::string& m) { throw Error(ErrorKind::Model, m); }
[[noreturn]] inline void fail_input(const std::string& m) { throw Error(ErrorKind::Input, m); }
[[noreturn]] inline void fail_runtime(const std::string& m) { throw Error(ErrorKind::Runtime, m); }
[[noreturn]] inline void fail_usage(const std::string& m) { throw Error(ErrorKind::Usage, m); }

}  // namespace refeval
