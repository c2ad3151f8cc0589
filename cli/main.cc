// `coupler`: the one user command. Thin: parse arguments, call the libraries, map outcomes to
// exit codes (0 ok, 1 runtime failure, 2 bad input).
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "runtime/logging.h"

int main(int argc, char** argv) {
  using namespace coupler::cli;
  CLI::App app{"coupler: a distributed job runner for AI pipelines", "coupler"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();

  CommandBody run;
  AddPlanCommand(app, &run);
  AddRunCommand(app, &run);
  AddTrainCommand(app, &run);
  AddDoctorCommand(app, &run);
  AddServiceCommands(app, &run);
  AddClientCommands(app, &run);
  AddLogsCommand(app, &run);
  AddGcCommand(app, &run);
  AddStateCommand(app, &run);
  AddAutoscaleCommand(app, &run);
  AddKeygenCommand(app, &run);
  AddGangAgentCommand(app, &run);
  AddVersionCommand(app, &run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  if (auto s = coupler::SetLogLevel(log_level); !s.ok()) {
    std::fprintf(stderr, "coupler: %s\n", s.message().c_str());
    return kExitBadInput;
  }
  return run ? run() : kExitBadInput;
}
