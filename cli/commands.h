// Each `coupler` subcommand registers itself on the CLI11 app; main() runs whichever was chosen.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace coupler::cli {

// Exit codes every command follows: 2 = bad input, 1 = runtime failure.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Sets `*run` to the command's body when that subcommand is chosen.
using CommandBody = std::function<int()>;
void AddPlanCommand(CLI::App& app, CommandBody* run);
void AddVersionCommand(CLI::App& app, CommandBody* run);
void AddServiceCommands(CLI::App& app, CommandBody* run);  // coordinator, worker
void AddClientCommands(CLI::App& app, CommandBody* run);   // submit, status, cancel, workers, drain
void AddRunCommand(CLI::App& app, CommandBody* run);       // run: the embedded default
void AddTrainCommand(CLI::App& app, CommandBody* run);     // train: one rank under mpirun
void AddDoctorCommand(CLI::App& app, CommandBody* run);    // doctor: what this machine lacks
void AddKeygenCommand(CLI::App& app, CommandBody* run);    // keygen: CURVE key pairs
void AddGangAgentCommand(CLI::App& app, CommandBody* run); // gang-agent: mpirun's remote launcher
void AddLogsCommand(CLI::App& app, CommandBody* run);      // logs: what a job's tasks printed
void AddGcCommand(CLI::App& app, CommandBody* run);        // gc: run directories past retention
void AddStateCommand(CLI::App& app, CommandBody* run);     // state backup|restore
void AddAutoscaleCommand(CLI::App& app, CommandBody* run); // autoscale: the pool follows the advice

}  // namespace coupler::cli
