// The control family: If, Loop, Scan.
#include "refeval/registry.h"

namespace refeval::ops {

void register_if(Registry& reg);
void register_loop(Registry& reg);
void register_scan(Registry& reg);
void register_scan8(Registry& reg);

void register_control(Registry& reg) {
  register_if(reg);
  register_loop(reg);
  register_scan(reg);
  register_scan8(reg);
}

}  // namespace refeval::ops
