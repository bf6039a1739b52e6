// `actorflow convert`: writes a named dataset's splits as TFRecord shards of
// tf.train.Example records, the layout of TensorFlow's MNIST convert_to_records.py
// (int64 features height, width, depth, label; bytes feature image_raw, one byte per
// pixel), which `actorflow train --data-format tfrecord` reads back.
//
//   actorflow convert --dataset fashion-mnist --out DIR [--data-dir DIR] [--shards N]
//
// Writes DIR/train-00000-of-0000N.tfrecord ... and DIR/test-00000-of-0000N.tfrecord
// ...: example i of a split goes to shard i mod N, so that shards are equal to within
// one example and reading them interleaved keeps the original order. Prints one line
// per split (records and shards written). Errors name the culprit: the dataset, an
// --out that cannot be created, a shard that cannot be written.
#ifndef ACTORFLOW_TOOLS_CONVERT_COMMAND_H_
#define ACTORFLOW_TOOLS_CONVERT_COMMAND_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "graph/status.h"
#include "tools/cli/cli_common.h"

namespace actorflow {
namespace cli {

struct ConvertCommandOptions {
  std::string dataset;   // tools/train/train_datasets.h's names
  std::string data_dir;  // empty: the dataset's default directory
  std::string out_dir;   // relative paths go through ResolveUserPath
  int64_t shards = 1;    // per split, >= 1
};

int ConvertCommand(const ConvertCommandOptions& options, std::ostream& out, std::ostream& err);

Subcommand AddConvertSubcommand(CLI::App* parent);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CONVERT_COMMAND_H_
