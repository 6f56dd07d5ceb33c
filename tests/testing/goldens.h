// Test helpers: golden files under tests/golden/, compared line by line, rewritten when
// WEFT_UPDATE_GOLDENS=1 (scripts/update-goldens.sh).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace weft::testing {

std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& text);
std::vector<std::string> lines_of(const std::string& text);

// Is WEFT_UPDATE_GOLDENS=1?
bool updating_goldens();

// Where "actual" first differs from "golden": "FILE line N, in KERNEL:", then both lines
// (the kernel is the nearest kernel name above); nothing when they are equal.
std::optional<std::string> golden_mismatch(const std::string& file, const std::string& actual,
                                           const std::string& golden);

// Compares "text" with the file "golden" (named by its folder and file name), or writes it
// there when updating_goldens().
void check_golden(const std::filesystem::path& golden, const std::string& text);

// The kernels of a kernels.txt-style text, one piece each ("kernel ..." up to the next), with
// comment and blank lines left out.
std::vector<std::string> kernel_texts(const std::string& text);

// Does each kernel of "text" parse, and print as it is written?
void expect_kernels_round_trip(const std::string& file, const std::string& text);

} // namespace weft::testing
