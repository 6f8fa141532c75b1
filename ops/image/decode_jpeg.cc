// JPEG through libjpeg (default decompression settings: islow IDCT, fancy upsampling), output
// RGB as Pillow's decoder gives it.
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {
namespace {

struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void no_message(j_common_ptr) {}  // warnings ("Premature end of JPEG file") are not printed

// Plain C-style decode: only trivially destructible locals live across setjmp. Returns false with
// the library's message on error.
bool decode(const uint8_t* data, size_t size, std::vector<uint8_t>& out, int64_t& h, int64_t& w, char* message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = on_error;
  err.base.output_message = no_message;
  err.message[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    std::snprintf(message, JMSG_LENGTH_MAX, "%s", err.message);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  h = cinfo.output_height;
  w = cinfo.output_width;
  out.resize(size_t(h * w * 3));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.data() + size_t(cinfo.output_scanline) * size_t(w) * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

RgbImage decode_jpeg(const uint8_t* data, size_t size) {
  RgbImage img;
  char message[JMSG_LENGTH_MAX];
  if (!decode(data, size, img.pixels, img.height, img.width, message))
    fail_runtime(std::string("invalid JPEG data: ") + message);
  return img;
}

}  // namespace refeval::ops
