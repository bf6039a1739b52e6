// The TensorFlow Layers tutorial CNN trained on Fashion-MNIST from TFRecord files,
// between-graph on a local cluster, written as a user of actorflow would: only
// `#include "actorflow.h"` and `deps = ["//:actorflow"]`. TensorFlow 1.x's pattern,
// one thread per worker task:
//
//   with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=...)):
//     x -> conv2d(32, 5) -> max_pooling2d -> conv2d(64, 5) -> max_pooling2d -> flatten
//       -> dense(1024) -> dropout(0.4, training) -> dense(10)
//   sess = tf.Session(server.target);  for batch in my shard of the records: sess.run(train_op)
//
// The cluster (1 ps task, 2 worker tasks) is a LocalCluster: each task a real Server
// on a port of 127.0.0.1. Both workers build the same graph, its variables on the ps
// task; each reads its shard (Dataset::Shard) of the train*.tfrecord files that
// `actorflow convert --dataset fashion-mnist --out DIR` writes, and applies its
// gradients asynchronously. Worker 0 then evaluates the inference path (dropout off)
// on the test*.tfrecord files:
//
//   bazel run //:actorflow -- ... ; bazel run //examples/fashion_cnn -- DIR [STEPS]
//   (prints "Test set accuracy: 0.8..." after the default 300 steps per worker)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <future>
#include <thread>
#include <vector>

#include "actorflow.h"

using namespace actorflow;  // NOLINT: an example keeps the names short

// The network; `training` turns dropout on. The layers own their variables, so the
// training and the inference path share them.
struct Net {
  layers::Conv2D conv1{"conv1", {.filters = 32, .kernel_size = 5, .activation = Activation::kRelu}};
  layers::Conv2D conv2{"conv2", {.filters = 64, .kernel_size = 5, .activation = Activation::kRelu}};
  layers::Dense dense{"dense", {.units = 1024, .activation = Activation::kRelu}};
  layers::Dropout dropout{0.4, /*seed=*/1};
  layers::Dense logits{"logits", {.units = 10}};

  StatusOr<Output> operator()(const Scope& s, const Output& images, bool training) {
    AF_ASSIGN_OR_RETURN(auto h, conv1(s, images, training));
    AF_ASSIGN_OR_RETURN(h, layers::MaxPooling2D(s, h, 2, 2));
    AF_ASSIGN_OR_RETURN(h, conv2(s, h, training));
    AF_ASSIGN_OR_RETURN(h, layers::MaxPooling2D(s, h, 2, 2));
    AF_ASSIGN_OR_RETURN(h, dense(s, Flatten(s, h), training));
    AF_ASSIGN_OR_RETURN(h, dropout(s, h, training));
    return logits(s, h, training);
  }
};

// Records of `dir`/<split>*.tfrecord as (image float32 [28,28,1], label int32 []).
StatusOr<std::shared_ptr<const Dataset>> Images(const std::string& dir, const std::string& split) {
  AF_ASSIGN_OR_RETURN(auto files, MatchingFiles(dir + "/" + split + "*.tfrecord"));
  AF_ASSIGN_OR_RETURN(auto records, TFRecordDataset(files));
  return ParseImageExamples(records, ImageExampleOptions(), /*num_parallel_calls=*/2);
}

// The chief's initialization of the variables on the ps task, which the other
// worker waits for (TF1's MonitoredTrainingSession does this for its workers).
struct InitBarrier {
  std::promise<void> done;
  std::shared_future<void> ready = done.get_future().share();
};

Status TrainWorker(LocalCluster* cluster, int task, const std::string& dir, int steps,
                   InitBarrier* init) {
  const std::string device = "/job:worker/task:" + std::to_string(task);
  AF_ASSIGN_OR_RETURN(auto setter, ReplicaDeviceSetter(cluster->spec(), device));
  Scope root = Scope::NewRootScope(), worker = root.WithDeviceFunction(setter);
  auto x = Placeholder(worker, DType::kFloat32, {-1, 28, 28, 1});
  auto y = Placeholder(worker, DType::kInt32, {-1});
  Net net;
  AF_ASSIGN_OR_RETURN(auto train_logits, net(worker, x, /*training=*/true));
  AF_ASSIGN_OR_RETURN(auto eval_logits, net(worker, x, /*training=*/false));
  auto loss = Mean(worker, SparseSoftmaxCrossEntropyWithLogits(worker, train_logits, y).loss);
  auto hits = Equal(worker, ArgMax(worker, eval_logits, 1), Cast(worker, y, DType::kInt64));
  auto correct = Sum(worker, Cast(worker, hits, DType::kFloat32));
  AF_ASSIGN_OR_RETURN(auto train_op, AdamOptimizer(0.001).Minimize(worker, loss));
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root, *cluster->Target("worker", task)));
  if (task == 0) {
    Status initialized = session->Run({GlobalVariablesInitializer(root)}, nullptr);
    init->done.set_value();
    AF_RETURN_IF_ERROR(initialized);
  } else if (init->ready.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    return DeadlineExceeded("worker " + std::to_string(task) + ": no initialization in 60 s");
  }

  AF_ASSIGN_OR_RETURN(auto train, Images(dir, "train"));
  auto batches = train->Shard(2, task)->Shuffle(10000, /*seed=*/task)->Batch(100)->Repeat()
                     ->Prefetch(2)->MakeIterator();
  std::vector<Tensor> batch, out;
  for (int step = 0; step < steps; ++step) {
    AF_RETURN_IF_ERROR(batches->GetNext(&batch));
    AF_RETURN_IF_ERROR(session->Run({{x, batch[0]}, {y, batch[1]}}, {loss, train_op}, &out));
  }
  if (task != 0) return Status::OK();
  AF_ASSIGN_OR_RETURN(auto test, Images(dir, "test"));
  auto test_batches = test->Batch(1000)->MakeIterator();
  double right = 0, total = 0;
  while (test_batches->GetNext(&batch).ok()) {
    AF_RETURN_IF_ERROR(session->Run({{x, batch[0]}, {y, batch[1]}}, {correct}, &out));
    right += out[0].data<float>()[0];
    total += static_cast<double>(batch[1].NumElements());
  }
  std::printf("Test set accuracy: %.3f\n", right / total);
  return Status::OK();
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fashion_cnn DIR [STEPS]  (DIR: `actorflow convert` output)\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 300;
  auto cluster = LocalCluster::Start({{"ps", 1}, {"worker", 2}});
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return 1;
  }
  Status results[2];
  InitBarrier init;
  std::vector<std::thread> workers;
  for (int task = 0; task < 2; ++task) {
    workers.emplace_back(
        [&, task] { results[task] = TrainWorker(cluster->get(), task, dir, steps, &init); });
  }
  for (auto& w : workers) w.join();
  for (const Status& s : results) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
