// Weights read from a model file by mapping it, not copying it: a tensor whose bytes are a view of
// the file (an initializer's raw_data in the .onnx, or its external data) is resident only in the
// pages a run reads, and those pages can be dropped again (the OS reads them back from the file if
// they are touched). A weight whose kernels read only their packed copy (MatMul, Gemm) is then
// held once, not twice. The file must stay unchanged while the model is loaded.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace refeval {

// A read-only, copy-on-write mapping of a whole file; released when the last tensor viewing it is.
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> open(const std::string& path);  // fails with a model error
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

 private:
  MappedFile(unsigned char* data, size_t size) : data_(data), size_(size) {}
  unsigned char* data_;
  size_t size_;
};

// An aligned buffer of `bytes` for a tensor copied out of a mapped file: one whose offset there is
// not a multiple of its element size cannot be viewed as its type (load). The buffer remembers
// where the bytes lie, for readers that move bytes (Gather of rows) and may read them there
// instead, so that a session can let the copy go.
std::shared_ptr<void> file_copy_buffer(size_t bytes, std::shared_ptr<MappedFile> file, int64_t offset);
// Where the copy starting at `data` came from; file null when `data` starts no such copy.
struct FileBytes {
  std::shared_ptr<MappedFile> file;
  int64_t offset = 0;
};
FileBytes copied_from(const void* data);

// Whether [data, data + n) lies in a mapped model file.
bool file_backed(const void* data, size_t n);
// Lets the OS drop the whole pages of [data, data + n) from memory when they lie in a mapped file
// (they are read again from the file when touched); nothing for other memory.
void release_file_pages(const void* data, size_t n);
// The bytes of [data, data + n) in memory now: n, or for a mapped file the resident pages' share.
size_t resident_bytes(const void* data, size_t n);

}  // namespace refeval
