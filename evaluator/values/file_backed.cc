#include "refeval/file_backed.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "refeval/error.h"

namespace refeval {
namespace {

// The live mappings, start -> size, for file_backed() and friends.
std::mutex g_mutex;
std::map<uintptr_t, size_t> g_mappings;

bool inside_mapping(uintptr_t begin, size_t n) {
  std::lock_guard lock(g_mutex);
  auto it = g_mappings.upper_bound(begin);
  if (it == g_mappings.begin()) return false;
  --it;
  return begin + n <= it->first + it->second;
}

const uintptr_t kPage = uintptr_t(sysconf(_SC_PAGESIZE));

// The live file copies, start -> where their bytes lie.
std::mutex g_copies_mutex;
std::map<uintptr_t, FileBytes> g_copies;

}  // namespace

std::shared_ptr<void> file_copy_buffer(size_t bytes, std::shared_ptr<MappedFile> file, int64_t offset) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  {
    std::lock_guard lock(g_copies_mutex);
    g_copies[uintptr_t(p)] = FileBytes{std::move(file), offset};
  }
  return std::shared_ptr<void>(p, [](void* q) {
    {
      std::lock_guard lock(g_copies_mutex);
      g_copies.erase(uintptr_t(q));
    }
    std::free(q);
  });
}

FileBytes copied_from(const void* data) {
  std::lock_guard lock(g_copies_mutex);
  auto it = g_copies.find(uintptr_t(data));
  return it == g_copies.end() ? FileBytes{} : it->second;
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail_model(fmt::format("cannot open '{}'", path));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    fail_model(fmt::format("cannot read '{}' (empty or not a file)", path));
  }
  // Private and writable: an accidental write copies the page instead of faulting or changing the file.
  void* p = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) fail_model(fmt::format("cannot map '{}' into memory", path));
  {
    std::lock_guard lock(g_mutex);
    g_mappings[uintptr_t(p)] = size_t(st.st_size);
  }
  return std::shared_ptr<MappedFile>(new MappedFile(static_cast<unsigned char*>(p), size_t(st.st_size)));
}

MappedFile::~MappedFile() {
  {
    std::lock_guard lock(g_mutex);
    g_mappings.erase(uintptr_t(data_));
  }
  munmap(data_, size_);
}

bool file_backed(const void* data, size_t n) { return n > 0 && inside_mapping(uintptr_t(data), n); }

void release_file_pages(const void* data, size_t n) {
  if (!file_backed(data, n)) return;
  // Only the pages the range covers whole: the ones at its ends may hold a neighbour's bytes.
  const uintptr_t begin = (uintptr_t(data) + kPage - 1) / kPage * kPage, end = (uintptr_t(data) + n) / kPage * kPage;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

size_t resident_bytes(const void* data, size_t n) {
  if (!file_backed(data, n)) return n;
  // /proc/self/pagemap says which pages this process has mapped in (bit 63, present); mincore
  // would count pages the OS keeps cached for the file, which are not the process's memory.
  const uintptr_t first = uintptr_t(data) / kPage, last = (uintptr_t(data) + n - 1) / kPage;
  const int fd = ::open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return n;
  std::vector<uint64_t> entries(size_t(last - first + 1));
  const ssize_t want = ssize_t(entries.size() * sizeof(uint64_t));
  const ssize_t got = pread(fd, entries.data(), size_t(want), off_t(first * sizeof(uint64_t)));
  ::close(fd);
  if (got != want) return n;
  size_t pages = 0;
  for (uint64_t e : entries) pages += (e >> 63) & 1;
  return std::min(n, pages * size_t(kPage));
}

}  // namespace refeval
