#include "weft/toolchain/cubin.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace weft::toolchain {

namespace {

// ELF64, little-endian: the parts read here.
constexpr size_t kShoff = 0x28, kShentsize = 0x3A, kShnum = 0x3C, kShstrndx = 0x3E;
constexpr uint32_t kSymtab = 2;
constexpr uint32_t kNobits = 8;
// .nv.info attributes (format, attribute): EIFMT_SVAL entries hold a function's symbol index
// and a value.
constexpr uint8_t kFormatNone = 1, kFormatByte = 2, kFormatHalf = 3, kFormatValue = 4;
constexpr uint8_t kRegisterCount = 0x2f, kFrameSize = 0x11;

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0;
};

template <typename T> bool read(std::string_view elf, size_t at, T& out) {
  if (at > elf.size() || elf.size() - at < sizeof(T)) return false;
  std::memcpy(&out, elf.data() + at, sizeof(T));
  return true;
}

std::string_view c_string(std::string_view elf, size_t at) {
  if (at >= elf.size()) return {};
  std::string_view rest = elf.substr(at);
  return rest.substr(0, rest.find('\0'));
}

} // namespace

Result<std::map<std::string, CubinFunction>> cubin_functions(std::string_view elf) {
  auto bad = [] { return Status::error("not a 64-bit CUDA ELF object"); };
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (elf.size() < 0x40 ||
      elf.substr(0, 4) != "\x7f"
                          "ELF" ||
      elf[4] != 2 || !read(elf, kShoff, shoff) || !read(elf, kShentsize, shentsize) ||
      !read(elf, kShnum, shnum) || !read(elf, kShstrndx, shstrndx) || shentsize < 64 ||
      shstrndx >= shnum)
    return bad();
  std::vector<Section> sections(shnum);
  for (size_t i = 0; i < shnum; ++i) {
    size_t at = shoff + i * shentsize;
    Section& s = sections[i];
    if (!read(elf, at, s.name) || !read(elf, at + 4, s.type) || !read(elf, at + 24, s.offset) ||
        !read(elf, at + 32, s.size) || !read(elf, at + 40, s.link) || s.offset > elf.size())
      return bad();
    // A NOBITS section (.nv.shared.*) has a size but no bytes in the file.
    if (s.type != kNobits && elf.size() - s.offset < s.size) return bad();
  }
  auto name_of = [&](const Section& s) {
    return c_string(elf, sections[shstrndx].offset + s.name);
  };
  // Symbol names by index, for the attributes that name a function by its symbol.
  std::vector<std::string_view> symbols;
  for (const Section& s : sections) {
    if (s.type != kSymtab || s.link >= shnum) continue;
    for (uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += 24) {
      uint32_t name = 0;
      read(elf, at, name);
      symbols.push_back(c_string(elf, sections[s.link].offset + name));
    }
  }
  std::map<std::string, CubinFunction> functions;
  constexpr std::string_view kText = ".text.", kShared = ".nv.shared.";
  for (const Section& s : sections) {
    std::string_view name = name_of(s);
    if (name.starts_with(kText)) functions[std::string(name.substr(kText.size()))];
  }
  for (const Section& s : sections) {
    std::string_view name = name_of(s);
    if (name.starts_with(kShared)) {
      auto f = functions.find(std::string(name.substr(kShared.size())));
      if (f != functions.end()) f->second.shared_bytes = static_cast<int64_t>(s.size);
      continue;
    }
    if (name != ".nv.info") continue;
    for (uint64_t at = s.offset; at + 2 <= s.offset + s.size;) {
      uint8_t format = static_cast<uint8_t>(elf[at]), attribute = static_cast<uint8_t>(elf[at + 1]);
      if (format == kFormatNone) {
        at += 2;
      } else if (format == kFormatByte) {
        at += 3;
      } else if (format == kFormatHalf) {
        at += 4;
      } else if (format == kFormatValue) {
        uint16_t size = 0;
        uint32_t symbol = 0, value = 0;
        if (!read(elf, at + 2, size)) return bad();
        if (size >= 8 && read(elf, at + 4, symbol) && read(elf, at + 8, value) &&
            symbol < symbols.size()) {
          auto f = functions.find(std::string(symbols[symbol]));
          if (f != functions.end() && attribute == kRegisterCount) f->second.registers = value;
          if (f != functions.end() && attribute == kFrameSize) f->second.frame_bytes = value;
        }
        at += 4 + size;
      } else {
        return bad();
      }
    }
  }
  return functions;
}

Result<int64_t> resident_blocks(const CubinFunction& f, int64_t block, const std::string& arch) {
  struct Limits {
    std::string_view arch;
    int64_t threads, blocks, shared_kib;
  };
  // Per SM (CUDA C++ Programming Guide, compute capabilities): 64K registers on each.
  constexpr Limits kLimits[] = {{"sm_80", 2048, 32, 164},
                                {"sm_86", 1536, 16, 100},
                                {"sm_89", 1536, 24, 100},
                                {"sm_90", 2048, 32, 228}};
  const Limits* l = nullptr;
  for (const Limits& candidate : kLimits)
    if (candidate.arch == arch) l = &candidate;
  if (!l) {
    return Status::error(
        fmt::format("no occupancy limits for {} (sm_80, sm_86, sm_89, sm_90)", arch));
  }
  if (block <= 0) return Status::error("a block has at least one thread");
  int64_t warps = (block + 31) / 32;
  int64_t by_threads = l->threads / (warps * 32);
  int64_t registers_a_warp = (std::max<int64_t>(f.registers, 1) * 32 + 255) / 256 * 256;
  int64_t by_registers = 65536 / registers_a_warp / warps;
  int64_t by_shared = l->shared_kib * 1024 / std::max<int64_t>(f.shared_bytes, 1024);
  return std::min({l->blocks, by_threads, by_registers, by_shared});
}

} // namespace weft::toolchain
