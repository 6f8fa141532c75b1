// The image family: ImageDecoder.
#include "refeval/registry.h"

namespace refeval::ops {

void register_image_decoder(Registry& reg);

void register_image(Registry& reg) { register_image_decoder(reg); }

}  // namespace refeval::ops
