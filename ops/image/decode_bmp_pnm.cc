// BMP (uncompressed 1, 4, 8, 24 and 32 bits per pixel, bottom-up or top-down; 32-bit with
// BI_BITFIELDS masks) and PNM (P1-P6, maxval up to 255, scaled to 0-255), decoded here directly.
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {
namespace {

uint32_t le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Extracts a channel from a pixel by mask, scaled to 8 bits.
uint8_t by_mask(uint32_t px, uint32_t mask) {
  if (mask == 0) return 0;
  int shift = 0;
  while (!((mask >> shift) & 1)) ++shift;
  const uint32_t max = mask >> shift;
  return uint8_t(((px & mask) >> shift) * 255u / max);
}

}  // namespace

RgbImage decode_bmp(const uint8_t* d, size_t n) {
  auto need = [&](size_t k) {
    if (n < k) fail_runtime("invalid BMP data: truncated");
  };
  need(54);
  const uint32_t offset = le(d + 10, 4), header = le(d + 14, 4);
  if (header < 40) fail_runtime("invalid BMP data: OS/2 headers are not supported");
  const int32_t width = int32_t(le(d + 18, 4)), height_raw = int32_t(le(d + 22, 4));
  const uint32_t bpp = le(d + 28, 2), compression = le(d + 30, 4), used = le(d + 46, 4);
  if (width <= 0 || height_raw == 0 || height_raw == INT32_MIN) fail_runtime("invalid BMP data: bad dimensions");
  const bool top_down = height_raw < 0;
  const int64_t h = top_down ? -int64_t(height_raw) : height_raw, w = width;
  uint32_t masks[3] = {0x00FF0000, 0x0000FF00, 0x000000FF};
  if (compression == 3 || compression == 6) {  // BI_BITFIELDS
    need(14 + 40 + 12);
    for (int c = 0; c < 3; ++c) masks[c] = le(d + 54 + 4 * c, 4);
  } else if (compression != 0) {
    fail_runtime(fmt::format("BMP compression {} is not supported (only uncompressed)", compression));
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32)
    fail_runtime(fmt::format("BMP with {} bits per pixel is not supported", bpp));
  if (bpp == 32 && compression == 0) masks[0] = 0x00FF0000, masks[1] = 0x0000FF00, masks[2] = 0x000000FF;
  const size_t palette_at = 14 + header + (compression == 3 && header == 40 ? 12 : 0);
  const uint32_t colors = bpp <= 8 ? (used ? used : 1u << bpp) : 0;
  need(palette_at + size_t(colors) * 4);
  const size_t stride = size_t((w * bpp + 31) / 32 * 4);
  need(size_t(offset) + stride * size_t(h));
  RgbImage img{h, w, std::vector<uint8_t>(size_t(h * w * 3))};
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* row = d + offset + stride * size_t(top_down ? y : h - 1 - y);
    uint8_t* out = img.pixels.data() + y * w * 3;
    for (int64_t x = 0; x < w; ++x, out += 3) {
      if (bpp == 24) {
        out[0] = row[3 * x + 2], out[1] = row[3 * x + 1], out[2] = row[3 * x];
      } else if (bpp == 32) {
        const uint32_t px = le(row + 4 * x, 4);
        for (int c = 0; c < 3; ++c) out[c] = by_mask(px, masks[c]);
      } else {
        const uint32_t bit = uint32_t(x) * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx >= colors) fail_runtime("invalid BMP data: palette index out of range");
        const uint8_t* c = d + palette_at + 4 * idx;
        out[0] = c[2], out[1] = c[1], out[2] = c[0];
      }
    }
  }
  return img;
}

RgbImage decode_pnm(const uint8_t* d, size_t n) {
  const int kind = d[1] - '0';
  size_t pos = 2;
  auto skip = [&] {
    while (pos < n && (std::isspace(d[pos]) || d[pos] == '#')) {
      if (d[pos] == '#')
        while (pos < n && d[pos] != '\n') ++pos;
      else ++pos;
    }
  };
  auto number = [&]() -> int64_t {
    skip();
    if (pos >= n || !std::isdigit(d[pos])) fail_runtime("invalid PNM data: expected a number");
    int64_t v = 0;
    while (pos < n && std::isdigit(d[pos]) && v < (int64_t(1) << 40)) v = v * 10 + (d[pos++] - '0');
    return v;
  };
  const int64_t w = number(), h = number();
  const bool bitmap = kind == 1 || kind == 4;
  const int64_t maxval = bitmap ? 1 : number();
  if (w <= 0 || h <= 0 || w * h > (int64_t(1) << 32)) fail_runtime("invalid PNM data: bad dimensions");
  if (maxval < 1 || maxval > 255) fail_runtime("PNM with maxval above 255 is not supported");
  const int channels = (kind == 3 || kind == 6) ? 3 : 1;
  const bool binary = kind >= 4;
  if (binary) ++pos;  // the single whitespace after the header
  RgbImage img{h, w, std::vector<uint8_t>(size_t(h * w * 3))};
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      uint8_t v[3];
      for (int c = 0; c < channels; ++c) {
        int64_t s;
        if (kind == 4) {
          const size_t at = pos + size_t(y * ((w + 7) / 8) + x / 8);
          if (at >= n) fail_runtime("invalid PNM data: truncated");
          s = (d[at] >> (7 - x % 8)) & 1;
        } else if (binary) {
          if (pos >= n) fail_runtime("invalid PNM data: truncated");
          s = d[pos++];
        } else if (kind == 1) {
          skip();
          if (pos >= n) fail_runtime("invalid PNM data: truncated");
          s = d[pos++] == '1';
        } else {
          s = number();
        }
        if (s > maxval) fail_runtime("invalid PNM data: sample above maxval");
        v[c] = bitmap ? uint8_t(s ? 0 : 255) : uint8_t(s * 255 / maxval);
      }
      uint8_t* out = img.pixels.data() + (y * w + x) * 3;
      for (int c = 0; c < 3; ++c) out[c] = v[channels == 3 ? c : 0];
    }
  }
  return img;
}

}  // namespace refeval::ops
