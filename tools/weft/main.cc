// weft: the command-line driver. The contract (subcommands, flags, exit status) is in
// docs/cli.md: exit 0 on success, 1 on bad input (one "error:" line), 2 on usage errors.
#include <iostream>
#include <new>

#include <CLI/CLI.hpp>

#include "tools/weft/commands.h"
#include "weft/driver/pipeline.h"
#include "weft/graph/op_table.h"

namespace {

constexpr int kUsageError = 2;

// The subcommands whose engine has not landed yet say so in one line and exit 2.
void add_pending_command(CLI::App& app, const char* name, const char* summary) {
  CLI::App* cmd = app.add_subcommand(name, summary);
  cmd->allow_extras();
  cmd->callback([name] {
    std::cerr << "error: 'weft " << name
              << "' is not available yet: it needs the execution engine, which has not landed "
                 "(see docs/status.md); 'weft inspect' works\n";
    throw CLI::RuntimeError(kUsageError);
  });
}

int run_cli(int argc, char** argv) {
  CLI::App app{"Weft: an ONNX tensor compiler for memory-bound work"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "weft 0.1.0");

  weft::cli::InspectOptions inspect;
  CLI::App* cmd = app.add_subcommand("inspect", "Show the graph after each pass");
  cmd->add_option("model", inspect.model, "The .onnx model")->required();
  std::vector<std::string> steps(weft::pipeline_steps().begin(), weft::pipeline_steps().end());
  cmd->add_option("--after", inspect.after, "Show only the graph after this step")
      ->check(CLI::IsMember(steps));
  cmd->add_option("--dump-dir", inspect.dump_dir, "Write the graph after each step here");
  cmd->add_option("--device", inspect.device, "Target device")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_flag("--json", inspect.json, "Print one JSON object");

  CLI::App* ops_cmd = app.add_subcommand("ops", "List the supported ONNX ops and their opsets");
  ops_cmd->callback([] {
    for (const weft::OpDef& def : weft::all_ops()) {
      std::cout << def.op_type << " " << def.min_opset << "-" << def.max_opset << "\n";
    }
  });

  add_pending_command(app, "run", "Run a model on inputs (needs the execution engine)");
  add_pending_command(app, "test-onnx", "Run ONNX backend test cases (needs the execution engine)");
  add_pending_command(app, "bench", "Benchmark a model (needs the execution engine)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kUsageError;
  }
  if (cmd->parsed()) return weft::cli::inspect(inspect);
  return ops_cmd->parsed() ? 0 : kUsageError;
}

} // namespace

int main(int argc, char** argv) {
  // Bad input never crashes weft; these are the last line of defence, not the error path.
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
  }
  return 1;
}
