// ImageDecoder (20): decodes a 1-D uint8 tensor holding an encoded image (JPEG, PNG, WebP, BMP,
// PNM, TIFF or JPEG 2000, recognised by its signature) into uint8 [H, W, 3] (pixel_format RGB,
// default, or BGR) or [H, W, 1] (Grayscale, as L = (19595 R + 38470 G + 7471 B + 2^15) >> 16,
// the ITU-R 601 weights Pillow uses).
#include <cstring>

#include "image_common.h"
#include "refeval/registry.h"

namespace refeval::ops {
namespace {

bool starts_with(const uint8_t* d, size_t n, const char* magic, size_t len, size_t offset = 0) {
  return n >= offset + len && std::memcmp(d + offset, magic, len) == 0;
}

RgbImage decode_any(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "\xFF\xD8\xFF", 3)) return decode_jpeg(d, n);
  if (starts_with(d, n, "\x89PNG\r\n\x1A\n", 8)) return decode_png(d, n);
  if (starts_with(d, n, "RIFF", 4) && starts_with(d, n, "WEBP", 4, 8)) return decode_webp(d, n);
  if (starts_with(d, n, "BM", 2)) return decode_bmp(d, n);
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return decode_pnm(d, n);
  if (starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4)) return decode_tiff(d, n);
  if (starts_with(d, n, "\0\0\0\x0CjP  \r\n\x87\n", 12) || starts_with(d, n, "\xFF\x4F\xFF\x51", 4))
    return decode_jpeg2000(d, n);
  fail_runtime("unrecognised image format (supported: JPEG, PNG, WebP, BMP, PNM, TIFF, JPEG 2000)");
}

class ImageDecoder : public OpRun {
 public:
  using Types = TypeList<uint8_t>;
  explicit ImageDecoder(const NodeContext& ctx) : format_(ctx.attr<std::string>("pixel_format", "RGB")) {
    if (format_ != "RGB" && format_ != "BGR" && format_ != "Grayscale")
      ctx.fail("pixel_format must be RGB, BGR or Grayscale, got '" + format_ + "'");
  }
  Values run(const Values& in, RunContext&) override {
    const Tensor& x = input_tensor(in, 0);
    if (x.dtype() != DType::UInt8 || x.rank() != 1) fail_runtime("encoded_stream must be a 1-D uint8 tensor");
    const RgbImage img = decode_any(x.data<uint8_t>(), size_t(x.size()));
    const int64_t pixels = img.height * img.width;
    const uint8_t* p = img.pixels.data();
    if (format_ == "Grayscale") {
      Tensor y(DType::UInt8, {img.height, img.width, 1});
      for (int64_t i = 0; i < pixels; ++i)
        y.data<uint8_t>()[i] = uint8_t((p[3 * i] * 19595u + p[3 * i + 1] * 38470u + p[3 * i + 2] * 7471u + 0x8000u) >> 16);
      return {y};
    }
    Tensor y(DType::UInt8, {img.height, img.width, 3});
    uint8_t* out = y.data<uint8_t>();
    const bool bgr = format_ == "BGR";
    for (int64_t i = 0; i < pixels; ++i)
      for (int c = 0; c < 3; ++c) out[3 * i + c] = p[3 * i + (bgr ? 2 - c : c)];
    return {y};
  }

 private:
  std::string format_;
};

}  // namespace

void register_image_decoder(Registry& reg) { reg.add("", "ImageDecoder", {20}, make<ImageDecoder>); }

}  // namespace refeval::ops
