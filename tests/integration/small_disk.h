// A small tmpfs mounted for a test (root only) and unmounted on every exit path: a real disk
// the test fills to the last byte, and frees again.
#pragma once

#include <sys/mount.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace coupler::itest {

class SmallDisk {
 public:
  SmallDisk(const std::filesystem::path& at, const std::string& size) : at_(at) {
    std::filesystem::create_directories(at_);
    mounted_ = ::mount("tmpfs", at_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  // Writes a file until the disk is full.
  void Fill() {
    std::ofstream out(at_ / "filler", std::ios::binary);
    const std::string block(64 << 10, 'x');
    while (out.write(block.data(), block.size())) {
    }
  }
  void Free() {
    std::error_code ec;
    std::filesystem::remove(at_ / "filler", ec);
  }

 private:
  std::filesystem::path at_;
  bool mounted_ = false;
};

}  // namespace coupler::itest
