// ImageDecoder on small images built in memory (PNM and BMP, whose encodings are simple to write
// by hand), the three pixel formats, and malformed data. JPEG, PNG, WebP, TIFF and JPEG 2000 are
// covered by the backend tests test_image_decoder_*.
#include <string>

#include "test_util.h"

using namespace refeval;
using namespace refeval::testing;
using build::attr;
using build::node;

namespace {
Tensor bytes(const std::string& s) {
  return tensor<uint8_t>({int64_t(s.size())}, std::vector<uint8_t>(s.begin(), s.end()));
}
std::string le32(uint32_t v) { return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; }
std::string le16(uint16_t v) { return {char(v), char(v >> 8)}; }
std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

// A PNG chunk: length, type, data, then the CRC-32 of type and data (`crc_ok` false: off by one).
std::string png_chunk(const std::string& type, const std::string& data, bool crc_ok = true) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : type + data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return be32(uint32_t(data.size())) + type + data + be32(~crc + (crc_ok ? 0 : 1));
}

// A bottom-up BMP of `bpp` bits with the given palette and pixel rows (already padded to 4 bytes).
std::string bmp(int32_t w, int32_t h, uint16_t bpp, const std::string& palette, const std::string& rows) {
  const uint32_t offset = 14 + 40 + uint32_t(palette.size());
  std::string s = "BM" + le32(offset + uint32_t(rows.size())) + le32(0) + le32(offset);
  s += le32(40) + le32(uint32_t(w)) + le32(uint32_t(h)) + le16(1) + le16(bpp) + le32(0) + le32(uint32_t(rows.size())) +
       le32(2835) + le32(2835) + le32(uint32_t(palette.size() / 4)) + le32(0);
  return s + palette + rows;
}

Value decode(const std::string& data, const char* format = "RGB") {
  return run_node(node("ImageDecoder", {"x"}, {"y"}, {attr("pixel_format", format)}), {bytes(data)}, 20)[0];
}
}  // namespace

TEST_CASE("ImageDecoder decodes PNM and BMP into [H, W, C]") {
  struct Case { const char* what; std::string data; const char* format; Tensor expected; };
  const Case cases[] = {
      {"binary PPM (P6)", std::string("P6\n2 1\n255\n") + "\x01\x02\x03\xFA\xFB\xFC", "RGB", tensor<uint8_t>({1, 2, 3}, {1, 2, 3, 250, 251, 252})},
      {"ASCII PPM with a comment and maxval 15 (P3)", "P3\n# c\n1 1 15\n15 0 5\n", "RGB", tensor<uint8_t>({1, 1, 3}, {255, 0, 85})},
      {"PGM (P5) expands to three channels", std::string("P5 1 2 255 ") + "\x10\x20", "RGB", tensor<uint8_t>({2, 1, 3}, {16, 16, 16, 32, 32, 32})},
      {"PBM (P1): 1 is black", "P1\n2 1\n1 0\n", "RGB", tensor<uint8_t>({1, 2, 3}, {0, 0, 0, 255, 255, 255})},
      {"BGR swaps channels", std::string("P6 1 1 255\n") + "\x01\x02\x03", "BGR", tensor<uint8_t>({1, 1, 3}, {3, 2, 1})},
      {"Grayscale uses the ITU-R 601 weights", std::string("P6 1 1 255\n") + std::string("\xFF\x00\x00", 3), "Grayscale", tensor<uint8_t>({1, 1, 1}, {76})},
      // 24-bit BMP rows are bottom-up and BGR; a 2-pixel row is 6 bytes padded to 8
      {"24-bit BMP", bmp(2, 2, 24, "", std::string("\x03\x02\x01\x06\x05\x04\0\0\x0C\x0B\x0A\x0F\x0E\x0D\0\0", 16)), "RGB",
       tensor<uint8_t>({2, 2, 3}, {10, 11, 12, 13, 14, 15, 1, 2, 3, 4, 5, 6})},
      {"8-bit palette BMP", bmp(1, 1, 8, std::string("\x00\x00\x00\x00\x30\x20\x10\x00", 8), std::string("\x01\0\0\0", 4)), "RGB",
       tensor<uint8_t>({1, 1, 3}, {0x10, 0x20, 0x30})},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    check_equal(decode(c.data, c.format), c.expected);
  }
}

TEST_CASE("ImageDecoder refuses malformed data") {
  struct Case { const char* what; std::string data; const char* message; };
  const Case cases[] = {
      {"unknown signature", "GIF89a", "unrecognised image format"},
      {"truncated PPM", "P6 2 2 255\n\x01", "truncated"},
      {"truncated JPEG", "\xFF\xD8\xFF\xE0", "invalid JPEG data"},
      {"truncated PNG", "\x89PNG\r\n\x1A\n", "invalid PNG data"},
      // A 1 x 1 RGB header libpng accepts, then pixel data whose checksum is wrong: the failure
      // comes while the pixels are read, after the header was.
      {"PNG with a corrupt IDAT", std::string("\x89PNG\r\n\x1A\n") + png_chunk("IHDR", be32(1) + be32(1) + std::string("\x08\x02\0\0\0", 5)) +
                                      png_chunk("IDAT", std::string("\x78\x9C\x63\x60\x00\x00", 6), false) + png_chunk("IEND", ""),
       "invalid PNG data: IDAT: CRC error"},
      {"truncated BMP", "BM1234", "invalid BMP data"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK_THROWS_WITH_AS(decode(c.data), doctest::Contains(c.message), Error);
  }
  CHECK_THROWS_AS(run_node(node("ImageDecoder", {"x"}, {"y"}, {attr("pixel_format", "RGBA")}), {bytes("P6 1 1 255\n...")}, 20), Error);
}
