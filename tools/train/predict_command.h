// `actorflow predict`: classifies the rows of a CSV file with a model that
// `actorflow train --checkpoint-dir DIR` saved.
//
//   actorflow predict --checkpoint-dir DIR --input FILE [--json] [--timeout-ms N]
//
// - DIR's model.json gives the model (features and their normalization statistics,
//   layers, classes, the label column) and its latest checkpoint the weights: no
//   other flag is needed.
// - FILE is laid out like the training data: a header naming the model's feature
//   columns (in any order; other columns are ignored) and its label column, whose
//   values are not used.
// - Without --json, one line per row: `row 1: class 2  probabilities 0.0100 0.0200
//   0.9700`. With --json, exactly one line:
//     {"predictions": [{"class": 2, "probabilities": [0.01, 0.02, 0.97]}, ...]}
//   with the rows in file order.
//
// Errors are one line `actorflow: <Status>` on stderr naming the culprit (the
// directory, the file:line:column, the missing column); see cli_common.h for the
// exit codes.
#ifndef ACTORFLOW_TOOLS_TRAIN_PREDICT_COMMAND_H_
#define ACTORFLOW_TOOLS_TRAIN_PREDICT_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct PredictCommandOptions {
  // Relative paths go through ResolveUserPath.
  std::string checkpoint_dir;
  std::string input_path;
  bool json = false;
  int64_t timeout_ms = 30000;
};

// Runs the command: predictions go to `out`, an error line to `err`. Returns the
// exit code. Never throws.
int PredictCommand(const PredictCommandOptions& options, std::ostream& out, std::ostream& err);

// Declares `predict` on `parent`; the returned main runs PredictCommand on
// std::cout / std::cerr.
Subcommand AddPredictSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_TRAIN_PREDICT_COMMAND_H_
