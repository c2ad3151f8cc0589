// `coupler version`: the build's version and which backends it was compiled with.
#include <cstdio>

#include "cli/commands.h"
#include "kernels/device.h"

namespace coupler::cli {

void AddVersionCommand(CLI::App& app, CommandBody* run) {
  CLI::App* cmd = app.add_subcommand("version", "Print the version and the compiled-in backends");
  cmd->callback([run] {
    *run = [] {
      std::printf("coupler %s\ncuda: %s (runtime %s)\n", COUPLER_VERSION,
                  kernels::BuiltWithCuda() ? "built in" : "not built",
                  kernels::CudaRuntimeVersion().c_str());
      return kExitOk;
    };
  });
}

}  // namespace coupler::cli
