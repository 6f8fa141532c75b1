// TIFF through libtiff, reading from memory; any layout libtiff's RGBA interface handles.
#include <cstring>

#include <tiffio.h>

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {
namespace {

struct MemoryFile {
  const uint8_t* data;
  toff_t size, pos;
};

tsize_t read_fn(thandle_t h, tdata_t buf, tsize_t n) {
  auto* f = static_cast<MemoryFile*>(h);
  const toff_t k = std::min<toff_t>(toff_t(n), f->size - std::min(f->pos, f->size));
  std::memcpy(buf, f->data + f->pos, size_t(k));
  f->pos += k;
  return tsize_t(k);
}
tsize_t write_fn(thandle_t, tdata_t, tsize_t) { return 0; }
toff_t seek_fn(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<MemoryFile*>(h);
  const toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->size;
  f->pos = base + off;
  return f->pos;
}
int close_fn(thandle_t) { return 0; }
toff_t size_fn(thandle_t h) { return static_cast<MemoryFile*>(h)->size; }
int map_fn(thandle_t, tdata_t*, toff_t*) { return 0; }
void unmap_fn(thandle_t, tdata_t, toff_t) {}

}  // namespace

RgbImage decode_tiff(const uint8_t* data, size_t size) {
  TIFFSetErrorHandler(nullptr);
  TIFFSetWarningHandler(nullptr);
  MemoryFile file{data, toff_t(size), 0};
  TIFF* tif = TIFFClientOpen("memory", "rm", &file, read_fn, write_fn, seek_fn, close_fn, size_fn, map_fn, unmap_fn);
  if (!tif) fail_runtime("invalid TIFF data");
  uint32_t w = 0, h = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  if (w == 0 || h == 0 || uint64_t(w) * h > (uint64_t(1) << 32)) {
    TIFFClose(tif);
    fail_runtime("invalid TIFF data: bad dimensions");
  }
  std::vector<uint32_t> rgba(size_t(w) * h);
  const int ok = TIFFReadRGBAImageOriented(tif, w, h, rgba.data(), ORIENTATION_TOPLEFT, 0);
  TIFFClose(tif);
  if (!ok) fail_runtime("invalid or unsupported TIFF data");
  RgbImage img{int64_t(h), int64_t(w), std::vector<uint8_t>(size_t(w) * h * 3)};
  for (size_t i = 0; i < rgba.size(); ++i) {
    img.pixels[3 * i] = uint8_t(TIFFGetR(rgba[i]));
    img.pixels[3 * i + 1] = uint8_t(TIFFGetG(rgba[i]));
    img.pixels[3 * i + 2] = uint8_t(TIFFGetB(rgba[i]));
  }
  return img;
}

}  // namespace refeval::ops
