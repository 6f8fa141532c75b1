// PNG through libpng's simplified API, converted to 8-bit RGB (alpha composited on black).
#include <png.h>

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {

RgbImage decode_png(const uint8_t* data, size_t size) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data, size))
    fail_runtime(std::string("invalid PNG data: ") + image.message);
  image.format = PNG_FORMAT_RGB;
  RgbImage img;
  img.height = image.height;
  img.width = image.width;
  img.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, img.pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    fail_runtime("invalid PNG data: " + message);
  }
  return img;
}

}  // namespace refeval::ops
