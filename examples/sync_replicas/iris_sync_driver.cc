// The training of examples/sync_replicas/iris_sync.cc, as a function: what each
// worker task runs, whether it is a process of its own under `actorflow launch` or a
// thread of a simulated cluster (SimulatedCluster::RunDrivers; tests/sim_driver_test.cc
// runs it there unchanged, with a worker killed mid-training).
#include "examples/sync_replicas/iris_sync_driver.h"

#include <cstdio>
#include <string>

#include "actorflow.h"

namespace actorflow {

Status TrainIrisSync(const std::string& model_dir, int64_t last_step) {
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

}  // namespace actorflow
