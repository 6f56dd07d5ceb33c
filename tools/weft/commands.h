// The subcommands of the weft CLI (the contract is in docs/cli.md).
#pragma once

#include <string>

namespace weft::cli {

struct InspectOptions {
  std::string model;
  std::string after;    // one pipeline step, or empty for all
  std::string dump_dir; // write each step's graph here
  std::string device = "cpu";
  bool json = false;
};

// Returns the process exit status.
int inspect(const InspectOptions& options);

} // namespace weft::cli
