// Synchronous between-graph training of a user's own model, as a TensorFlow 1.x
// driver would do it with tf.train.SyncReplicasOptimizer and
// tf.train.MonitoredTrainingSession: each worker task runs this program, the ps task
// is an `actorflow server`, and `actorflow launch` starts them all, putting each
// task's place in $TF_CONFIG:
//
//   actorflow launch --cluster cluster.json -- bazel-bin/examples/sync_replicas/iris_sync [--model-dir DIR] [--last-step N]
//
// Every step averages one gradient from each worker (replicas_to_aggregate = the
// number of workers); worker 0 is the chief: it initializes the model or restores it
// from DIR (a chief restarted against a live ps task keeps the live variables), saves
// checkpoints there. Each worker reads its own shard of
// examples/data/iris_training.csv and prints the test accuracy at the end.
//
// The training itself is TrainIrisSync (iris_sync_driver.cc).
#include <cstdlib>
#include <iostream>
#include <string>

#include "examples/sync_replicas/iris_sync_driver.h"

int main(int argc, char** argv) {
  std::string model_dir;
  int64_t last_step = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--model-dir") model_dir = argv[i + 1];
    else if (flag == "--last-step") last_step = std::atoll(argv[i + 1]);
    else argc = -1;
  }
  if (argc < 0 || argc % 2 == 0) {
    std::cerr << "usage: iris_sync [--model-dir DIR] [--last-step N]\n";
    return 2;
  }
  if (actorflow::Status s = actorflow::TrainIrisSync(model_dir, last_step); !s.ok()) { std::cerr << "iris_sync: " << s << "\n"; return 1; }
  return 0;
}
