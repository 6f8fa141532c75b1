#include "refeval/numerics.h"

#include <atomic>

namespace refeval {
namespace {
std::atomic<bool> g_emulate_accuracy_level{false};
}  // namespace

void set_emulate_accuracy_level(bool on) { g_emulate_accuracy_level = on; }
bool emulate_accuracy_level() { return g_emulate_accuracy_level; }

}  // namespace refeval
