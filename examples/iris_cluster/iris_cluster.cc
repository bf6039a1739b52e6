// The Iris classifier trained on a cluster, written as a user of actorflow would:
// only `#include "actorflow.h"` and `deps = ["//:actorflow"]`. TensorFlow 1.x's
// between-graph pattern with one worker:
//
//   with tf.device("/job:ps/task:0"):     the variables
//   with tf.device("/job:worker/task:0"): the model, the loss, optimizer.minimize(loss)
//   sess = tf.Session(server.target);  for batch in dataset: sess.run(train_op, ...)
//
// The cluster (1 ps task, 1 worker task) is a LocalCluster: each task is a real
// Server with its own actor system on a port of 127.0.0.1, so the worker reads the
// variables from the ps task and the updates run on the ps task, over loopback as
// between processes. A DNN with one hidden layer of 10 units learns from
// examples/data/iris_training.csv (120 rows, 4 features, 3 species) in shuffled
// batches of 32 for 250 epochs, then prints its accuracy on iris_test.csv:
//
//   bazel run //examples/iris_cluster        (prints "Test set accuracy: 0.967")
#include <cstdio>
#include <iostream>

#include "actorflow.h"

using namespace actorflow;  // NOLINT: an example keeps the names short

Status TrainIris() {
  AF_ASSIGN_OR_RETURN(auto cluster, LocalCluster::Start({{"ps", 1}, {"worker", 1}}));
  // Paths relative to the runfiles, where `bazel run` and `bazel test` start.
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("examples/data/iris_training.csv"));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv("examples/data/iris_test.csv"));

  // The variables live on the parameter server...
  Scope root = Scope::NewRootScope();
  Scope ps = root.WithDevice("/job:ps/task:0"), worker = root.WithDevice("/job:worker/task:0");
  const DType f32 = DType::kFloat32;
  AF_ASSIGN_OR_RETURN(auto w1, CreateVariable(ps, "w1", TruncatedNormal(ps, {4, 10}, f32, 1)));
  AF_ASSIGN_OR_RETURN(auto b1, CreateVariable(ps, "b1", Tensor(f32, {10})));
  AF_ASSIGN_OR_RETURN(auto w2, CreateVariable(ps, "w2", TruncatedNormal(ps, {10, 3}, f32, 2)));
  AF_ASSIGN_OR_RETURN(auto b2, CreateVariable(ps, "b2", Tensor(f32, {3})));

  // ...the model, its loss and the optimizer on the worker. features [N,4], labels [N]
  Output x = Placeholder(worker, f32, {-1, 4}), y = Placeholder(worker, DType::kInt32, {-1});
  auto hidden = Relu(worker, BiasAdd(worker, MatMul(worker, x, w1), b1));  // [N,10]
  auto logits = BiasAdd(worker, MatMul(worker, hidden, w2), b2);           // [N,3]
  auto loss = Mean(worker, SparseSoftmaxCrossEntropyWithLogits(worker, logits, y).loss);
  auto hits = Equal(worker, ArgMax(worker, logits, 1), Cast(worker, y, DType::kInt64));
  auto accuracy = Mean(worker, Cast(worker, hits, f32));
  AF_ASSIGN_OR_RETURN(auto train_op, AdamOptimizer(0.01).Minimize(worker, loss, Output()));

  // A session on the worker task's master; the variables are initialized once.
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root, *cluster->Target("worker", 0)));
  AF_RETURN_IF_ERROR(session->Run({GlobalVariablesInitializer(root)}, nullptr));

  // 250 epochs of shuffled batches of 32 rows: a training step per batch. Fetching
  // the train op beside the loss runs it (its slot in `out` stays empty).
  AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({train.features, train.labels}));
  auto batches = rows->Shuffle(120, /*seed=*/1)->Batch(32)->Repeat(250)->MakeIterator();
  std::vector<Tensor> batch, out;
  while (batches->GetNext(&batch).ok())
    AF_RETURN_IF_ERROR(session->Run({{x, batch[0]}, {y, batch[1]}}, {loss, train_op}, &out));
  std::printf("Last batch loss: %.4f\n", out[0].data<float>()[0]);
  AF_RETURN_IF_ERROR(session->Run({{x, test.features}, {y, test.labels}}, {accuracy}, &out));
  std::printf("Test set accuracy: %.3f\n", out[0].data<float>()[0]);
  return Status::OK();
}

int main() {
  const Status status = TrainIris();
  if (!status.ok()) std::cerr << "iris_cluster: " << status << "\n";
  return status.ok() ? 0 : 1;
}
