// WebP through libwebp.
#include <cstring>

#include <webp/decode.h>

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {

RgbImage decode_webp(const uint8_t* data, size_t size) {
  int w = 0, h = 0;
  uint8_t* rgb = WebPDecodeRGB(data, size, &w, &h);
  if (!rgb) fail_runtime("invalid WebP data");
  RgbImage img;
  img.height = h;
  img.width = w;
  img.pixels.assign(rgb, rgb + size_t(w) * size_t(h) * 3);
  WebPFree(rgb);
  return img;
}

}  // namespace refeval::ops
