// A libFuzzer-compatible driver for builds without libFuzzer (gcc, CI): runs the target on every
// seed file, then on seeded random mutations of them (bit flips, byte overwrites, truncations,
// insertions, splices of two seeds). Deterministic for a given --seed, so a failure reproduces.
//
//   fuzz_model_smoke [--mutations N] [--seed S] FILE_OR_DIR...
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

Bytes mutate(const std::vector<Bytes>& seeds, std::mt19937_64& rng) {
  Bytes b = seeds[rng() % seeds.size()];
  const int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t n = b.size();
    switch (rng() % 5) {
      case 0: if (n) b[rng() % n] ^= uint8_t(1u << (rng() % 8)); break;  // flip a bit
      case 1: if (n) b[rng() % n] = uint8_t(rng()); break;                  // overwrite a byte
      case 2: if (n) b.resize(rng() % n); break;                           // truncate
      case 3: b.insert(b.begin() + long(n ? rng() % n : 0), uint8_t(rng())); break;
      default: {  // splice: our head, another seed's tail
        const Bytes& other = seeds[rng() % seeds.size()];
        if (!n || other.empty()) break;
        const size_t cut = rng() % n, from = rng() % other.size();
        b.resize(cut);
        b.insert(b.end(), other.begin() + long(from), other.end());
      }
    }
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 1000;
  uint64_t seed = 0;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutations" && i + 1 < argc) { mutations = std::stol(argv[++i]); continue; }
    if (a == "--seed" && i + 1 < argc) { seed = std::stoull(argv[++i]); continue; }
    if (std::filesystem::is_directory(a)) {
      for (const auto& f : std::filesystem::directory_iterator(a))
        if (f.is_regular_file()) seeds.push_back(read_file(f.path()));
    } else {
      seeds.push_back(read_file(a));
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations N] [--seed S] FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  // With REFEVAL_FUZZ_LAST=FILE each input is written there before it runs, so a crash leaves
  // the input that caused it (for tests/fuzz/regressions/).
  const char* last = std::getenv("REFEVAL_FUZZ_LAST");
  auto run = [&](const Bytes& b) {
    if (last) std::ofstream(last, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    LLVMFuzzerTestOneInput(b.data(), b.size());
  };
  for (const Bytes& s : seeds) run(s);
  std::mt19937_64 rng(seed);
  for (long i = 0; i < mutations; ++i) run(mutate(seeds, rng));
  std::printf("%zu seeds and %ld mutations: no crash\n", seeds.size(), mutations);
  return 0;
}
