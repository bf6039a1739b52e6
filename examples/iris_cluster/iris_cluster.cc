// The Iris classifier trained on a cluster, written as a user of actorflow would:
// only `#include "actorflow.h"` and `deps = ["//:actorflow"]`. TensorFlow 1.x's
// between-graph pattern with one worker:
//
//   with tf.device(tf.train.replica_device_setter(cluster=cluster)):
//     the model (tf.layers.dense), the loss, optimizer.minimize(loss)
//   sess = tf.Session(server.target);  for batch in dataset: sess.run(train_op, ...)
//
// The cluster (1 ps task, 1 worker task) is a LocalCluster: each task is a real
// Server with its own actor system on a port of 127.0.0.1, so the worker reads the
// variables from the ps task and the updates run on the ps task, over loopback as
// between processes. Started by `actorflow launch`, which puts each task's place in
// $TF_CONFIG, the program is instead the worker task of that cluster (whose ps task
// the launcher runs as `actorflow server`), as a TF1 driver would be:
//
//   actorflow launch --cluster cluster.json -- bazel-bin/examples/iris_cluster/iris_cluster
//
// (one worker task: this driver initializes the variables itself).
//
// With `--model-dir DIR` it resumes from DIR's latest checkpoint and ends with a new
// one, the graph and its serving signature (x -> probabilities) beside it
// (ChiefCheckpoints, training/estimators/model_dir.h), so that `actorflow export
// --checkpoint-dir DIR --model-base-path BASE` makes a servable of it, as of the
// CLI's own between-graph models. A DNN with one hidden layer of 10 units learns from
// examples/data/iris_training.csv (120 rows, 4 features, 3 species) in shuffled
// batches of 32 for 250 epochs, then prints its accuracy on iris_test.csv:
//
//   bazel run //examples/iris_cluster        (prints "Test set accuracy: 0.967")
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "actorflow.h"

using namespace actorflow;  // NOLINT: an example keeps the names short

// The cluster and this program's target: TF_CONFIG's, with this task's server, when
// a launcher set it; else a LocalCluster of its own.
struct Place {
  ClusterSpec spec;
  std::string target;
  std::string worker;  // "/job:worker/task:I"
  std::unique_ptr<LocalCluster> local;
  std::unique_ptr<Server> server;
};

StatusOr<Place> FindPlace() {
  Place place;
  if (std::getenv("TF_CONFIG") == nullptr) {
    AF_ASSIGN_OR_RETURN(place.local, LocalCluster::Start({{"ps", 1}, {"worker", 1}}));
    place.spec = place.local->spec();
    AF_ASSIGN_OR_RETURN(place.target, place.local->Target("worker", 0));
    place.worker = "/job:worker/task:0";
    return place;
  }
  AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
  ServerOptions options;
  options.cluster = config.cluster;
  options.task = config.task;
  AF_ASSIGN_OR_RETURN(place.server, Server::Start(options));
  place.spec = config.cluster;
  place.target = place.server->target();
  place.worker = config.task.ToString();
  return place;
}

Status TrainIris(const std::string& model_dir) {
  AF_ASSIGN_OR_RETURN(Place place, FindPlace());
  // Paths relative to the runfiles, where `bazel run` and `bazel test` start.
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("examples/data/iris_training.csv"));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv("examples/data/iris_test.csv"));

  // The variables on the ps task, everything else on the worker (TF1's
  // replica_device_setter); the optimizer puts each update next to its variable.
  AF_ASSIGN_OR_RETURN(auto setter, ReplicaDeviceSetter(place.spec, place.worker));
  Scope root = Scope::NewRootScope(), worker = root.WithDeviceFunction(setter);
  // features [N,4] -> hidden [N,10] -> logits [N,3]; labels [N]
  auto x = Placeholder(worker.WithOpName("x"), DType::kFloat32, {-1, 4});
  auto y = Placeholder(worker, DType::kInt32, {-1});
  AF_ASSIGN_OR_RETURN(auto hidden, Dense(worker.NewSubScope("hidden"), x, 10, Activation::kRelu));
  AF_ASSIGN_OR_RETURN(auto logits, Dense(worker.NewSubScope("logits"), hidden, 3));
  auto loss = Mean(worker, SparseSoftmaxCrossEntropyWithLogits(worker, logits, y).loss);
  auto hits = Equal(worker, ArgMax(worker, logits, 1), Cast(worker, y, DType::kInt64));
  auto accuracy = Mean(worker, Cast(worker, hits, DType::kFloat32));
  auto probabilities = Softmax(worker.WithOpName("probabilities"), logits);
  AF_ASSIGN_OR_RETURN(auto train_op, AdamOptimizer(0.01).Minimize(worker, loss));
  GlobalVariablesInitializer(root.WithOpName("init"));
  // Without a directory it saves nothing and only initializes.
  AF_ASSIGN_OR_RETURN(ChiefCheckpoints checkpoints, ChiefCheckpoints::Create(root.graph(), model_dir));

  // A session on the worker task's master; the variables are initialized once, or
  // restored from the model directory.
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root, place.target));
  AF_ASSIGN_OR_RETURN(int64_t step, checkpoints.RestoreOrInitialize(session->session(), "init"));
  if (step > 0) std::printf("Resumed at step %lld from %s\n", static_cast<long long>(step), model_dir.c_str());

  // 250 epochs of shuffled batches of 32 rows: a training step per batch. Fetching
  // the train op beside the loss runs it (its slot in `out` stays empty).
  AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({train.features, train.labels}));
  auto batches = rows->Shuffle(120, /*seed=*/1)->Batch(32)->Repeat(250)->MakeIterator();
  std::vector<Tensor> batch, out;
  for (; batches->GetNext(&batch).ok(); ++step)
    AF_RETURN_IF_ERROR(session->Run({{x, batch[0]}, {y, batch[1]}}, {loss, train_op}, &out));
  AF_RETURN_IF_ERROR(session->Run({{x, test.features}, {y, test.labels}}, {accuracy}, &out));
  std::printf("Test set accuracy: %.3f\n", out[0].data<float>()[0]);
  const ServingSpec serving{"iris", {{"x", "x"}}, {{"probabilities", probabilities.name()}}};
  return checkpoints.Save(session->session(), step, *root.graph(), serving);
}

int main(int argc, char** argv) {
  std::string model_dir;
  if (argc == 3 && std::string(argv[1]) == "--model-dir") {
    model_dir = argv[2];
  } else if (argc != 1) {
    std::cerr << "usage: iris_cluster [--model-dir DIR]\n";
    return 2;
  }
  if (Status s = TrainIris(model_dir); !s.ok()) { std::cerr << "iris_cluster: " << s << "\n"; return 1; }
  return 0;
}
