// Helpers shared by ImageDecoder and its per-format decoders: every decoder produces 8-bit RGB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace refeval::ops {

struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, row-major, R G B
};

// Each decoder throws a runtime error naming the format when the data is not a valid image of it.
RgbImage decode_jpeg(const uint8_t* data, size_t size);
RgbImage decode_png(const uint8_t* data, size_t size);
RgbImage decode_webp(const uint8_t* data, size_t size);
RgbImage decode_bmp(const uint8_t* data, size_t size);
RgbImage decode_pnm(const uint8_t* data, size_t size);
RgbImage decode_tiff(const uint8_t* data, size_t size);
RgbImage decode_jpeg2000(const uint8_t* data, size_t size);

}  // namespace refeval::ops
