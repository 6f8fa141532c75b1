// JPEG 2000 (JP2 container or raw J2K codestream) through OpenJPEG, reading from memory.
// Components of more than 8 bits are scaled down to 8; signed ones are shifted to unsigned.
#include <cstring>

#include <openjpeg-2.5/openjpeg.h>  // pkg-config libopenjp2 adds this folder; spelled out so no flag is needed

#include "image_common.h"
#include "refeval/error.h"

namespace refeval::ops {
namespace {

struct Source {
  const uint8_t* data;
  OPJ_SIZE_T size, pos;
};

OPJ_SIZE_T read_fn(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<Source*>(user);
  if (s->pos >= s->size) return OPJ_SIZE_T(-1);
  const OPJ_SIZE_T k = std::min(n, s->size - s->pos);
  std::memcpy(buf, s->data + s->pos, k);
  s->pos += k;
  return k;
}
OPJ_OFF_T skip_fn(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<Source*>(user);
  const OPJ_OFF_T k = std::min<OPJ_OFF_T>(n, OPJ_OFF_T(s->size - s->pos));
  s->pos += OPJ_SIZE_T(k);
  return k;
}
OPJ_BOOL seek_fn(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<Source*>(user);
  if (n < 0 || OPJ_SIZE_T(n) > s->size) return OPJ_FALSE;
  s->pos = OPJ_SIZE_T(n);
  return OPJ_TRUE;
}

}  // namespace

RgbImage decode_jpeg2000(const uint8_t* data, size_t size) {
  Source src{data, size, 0};
  const bool jp2 = size >= 4 && data[0] == 0 && data[1] == 0 && data[2] == 0 && data[3] == 0x0C;
  opj_codec_t* codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_stream_t* stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  opj_stream_set_user_data(stream, &src, nullptr);
  opj_stream_set_user_data_length(stream, size);
  opj_stream_set_read_function(stream, read_fn);
  opj_stream_set_skip_function(stream, skip_fn);
  opj_stream_set_seek_function(stream, seek_fn);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  opj_image_t* image = nullptr;
  const bool ok = opj_setup_decoder(codec, &params) && opj_read_header(stream, codec, &image) &&
                  opj_decode(codec, stream, image) && opj_end_decompress(codec, stream);
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  if (!ok || !image || image->numcomps == 0) {
    if (image) opj_image_destroy(image);
    fail_runtime("invalid or unsupported JPEG 2000 data");
  }
  const opj_image_comp_t* c0 = &image->comps[0];
  RgbImage img{int64_t(c0->h), int64_t(c0->w), std::vector<uint8_t>(size_t(c0->w) * c0->h * 3)};
  const int channels = image->numcomps >= 3 ? 3 : 1;
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (comp.w != c0->w || comp.h != c0->h) {
      opj_image_destroy(image);
      fail_runtime("JPEG 2000 images with subsampled components are not supported");
    }
    for (size_t i = 0; i < size_t(comp.w) * comp.h; ++i) {
      int64_t v = comp.data[i] + (comp.sgnd ? (int64_t(1) << (comp.prec - 1)) : 0);
      if (comp.prec > 8) v >>= (comp.prec - 8);
      else if (comp.prec < 8) v = v * 255 / ((int64_t(1) << comp.prec) - 1);
      const uint8_t b = uint8_t(std::min<int64_t>(255, std::max<int64_t>(0, v)));
      for (int k = 0; k < (channels == 1 ? 3 : 1); ++k) img.pixels[3 * i + (channels == 1 ? k : c)] = b;
    }
  }
  opj_image_destroy(image);
  return img;
}

}  // namespace refeval::ops
