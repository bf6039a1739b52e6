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
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "actorflow.h"

using namespace actorflow;  // NOLINT: an example keeps the names short

Status Train(const std::string& model_dir, int64_t last_step) {
  AF_ASSIGN_OR_RETURN(TfConfig config, TfConfigFromEnv());
  AF_ASSIGN_OR_RETURN(auto server, Server::Start(config));
  const int workers = config.cluster.num_tasks("worker"), index = config.task.index;
  AF_ASSIGN_OR_RETURN(auto setter, ReplicaDeviceSetter(config.cluster, config.task.ToString()));
  Scope root = Scope::NewRootScope(), worker = root.WithDeviceFunction(setter);
  auto x = Placeholder(worker, DType::kFloat32, {-1, 4});
  auto y = Placeholder(worker, DType::kInt32, {-1});
  AF_ASSIGN_OR_RETURN(auto hidden, Dense(worker.NewSubScope("hidden"), x, 10, Activation::kRelu));
  AF_ASSIGN_OR_RETURN(auto logits, Dense(worker.NewSubScope("logits"), hidden, 3));
  auto loss = Mean(worker, SparseSoftmaxCrossEntropyWithLogits(worker, logits, y).loss);
  auto hits = Equal(worker, ArgMax(worker, logits, 1), Cast(worker, y, DType::kInt64));
  auto accuracy = Mean(worker, Cast(worker, hits, DType::kFloat32));
  AF_ASSIGN_OR_RETURN(auto global_step, CreateGlobalStep(worker));
  AdamOptimizer adam(0.01);
  SyncReplicasOptimizer sync(&adam, /*replicas_to_aggregate=*/workers, /*total_num_replicas=*/workers);
  AF_ASSIGN_OR_RETURN(auto train_op, sync.Minimize(worker, loss, global_step));

  MonitoredTrainingSessionOptions options;
  options.is_chief = index == 0;
  options.checkpoint_dir = model_dir;
  options.hooks = {sync.MakeSessionRunHook(options.is_chief), StopAtStepHook::AtLastStep(last_step)};
  AF_ASSIGN_OR_RETURN(auto session, NewMonitoredTrainingSession(root.graph(), server->target(), options));
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("examples/data/iris_training.csv"));
  AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({train.features, train.labels}));
  auto batches = rows->Shard(workers, index)->Shuffle(120, index + 1)->Batch(16)->Repeat()->MakeIterator();
  std::vector<Tensor> batch, out;
  while (!session->ShouldStop() && batches->GetNext(&batch).ok())
    AF_RETURN_IF_ERROR(session->Run({{x, batch[0]}, {y, batch[1]}}, {loss, train_op}, &out));

  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv("examples/data/iris_test.csv"));
  AF_RETURN_IF_ERROR(session->Run({{x, test.features}, {y, test.labels}}, {accuracy, global_step}, &out));
  std::printf("Global step %lld, test set accuracy: %.3f\n",
              static_cast<long long>(out[1].data<int64_t>()[0]), out[0].data<float>()[0]);
  return session->Close();
}

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
  if (Status s = Train(model_dir, last_step); !s.ok()) { std::cerr << "iris_sync: " << s << "\n"; return 1; }
  return 0;
}
