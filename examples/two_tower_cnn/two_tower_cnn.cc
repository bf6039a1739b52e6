// Model parallelism by hand, written as a user of actorflow would: only
// `#include "actorflow.h"` and `deps = ["//:actorflow"]`. The partially connected
// CNN of TensorFlow 1.x's model-parallel chapter, one tower per device:
//
//   with tf.device("/cpu:0"): tower 0 (conv -> pool -> conv -> pool)
//   with tf.device("/cpu:1"): tower 1 (its own filters, same layers)
//   with tf.device("/cpu:0"): concat the towers -> dense 128 -> dense 10, the loss
//
// The towers see the same images but share no weights and meet only at the dense
// head, so a step moves the images to CPU 1, tower 1's features back to CPU 0, and
// their gradient to CPU 1 again (plus a few scalars); the rest of each tower
// (forward, backward and Adam's updates of its filters) stays on its device. The
// session has two CPU devices (tf.ConfigProto(device_count={"CPU": 2})), each run by
// its own actor. The 8x8 digits of examples/data/digits_training.csv (64 pixels of
// 0..16 per row) train in shuffled batches of 32 for 15 epochs; the program prints
// the accuracy on digits_test.csv and what one training step sent between devices:
//
//   bazel run //examples/two_tower_cnn   (prints "Test set accuracy: 0.961" and
//                                         "Cross-device bytes per step: 24604")
#include <cstdio>
#include <iostream>
#include <string>

#include "actorflow.h"

using namespace actorflow;  // NOLINT: an example keeps the names short

// One tower under `scope` (its device and name): images [N,8,8,1] -> conv 3x3 (8)
// -> [N,8,8,8] -> pool 2x2 -> [N,4,4,8] -> conv 3x3 (16) -> [N,4,4,16] -> pool 2x2
// -> [N,2,2,16] -> flat [N,64]. Each tower has its own filter variables.
StatusOr<Output> Tower(const Scope& scope, const Output& images, int64_t seed) {
  AF_ASSIGN_OR_RETURN(auto filter1, CreateVariable(scope, "filter1",
      TruncatedNormal(scope, {3, 3, 1, 8}, DType::kFloat32, seed, 0.0, 0.1)));
  AF_ASSIGN_OR_RETURN(auto filter2, CreateVariable(scope, "filter2",
      TruncatedNormal(scope, {3, 3, 8, 16}, DType::kFloat32, seed + 1, 0.0, 0.1)));
  auto conv1 = Relu(scope, Conv2D(scope, images, filter1, {1, 1, 1, 1}, "SAME"));
  auto pool1 = MaxPool(scope, conv1, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  auto conv2 = Relu(scope, Conv2D(scope, pool1, filter2, {1, 1, 1, 1}, "SAME"));
  auto pool2 = MaxPool(scope, conv2, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
  return Reshape(scope, pool2, {-1, 2 * 2 * 16});
}

Status TrainTwoTowerCnn() {
  // Paths relative to the runfiles, where `bazel run` and `bazel test` start.
  CsvOptions csv;
  csv.label_column = "label";
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("examples/data/digits_training.csv", csv));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv("examples/data/digits_test.csv", csv));

  Scope root = Scope::NewRootScope();
  Scope cpu0 = root.WithDevice("/device:CPU:0"), cpu1 = root.WithDevice("/device:CPU:1");
  // pixels [N,64] of 0..16 -> images [N,8,8,1] of 0..1; labels [N]
  auto x = Placeholder(cpu0, DType::kFloat32, {-1, 64});
  auto y = Placeholder(cpu0, DType::kInt32, {-1});
  auto images = Reshape(cpu0, Div(cpu0, x, 16.0f), {-1, 8, 8, 1});
  AF_ASSIGN_OR_RETURN(auto tower0, Tower(cpu0.NewSubScope("tower0"), images, /*seed=*/1));
  AF_ASSIGN_OR_RETURN(auto tower1, Tower(cpu1.NewSubScope("tower1"), images, /*seed=*/3));
  // The head on CPU 0: features [N,128] -> hidden [N,128] -> logits [N,10]
  auto features = ConcatV2(cpu0, {tower0, tower1}, /*axis=*/1);
  AF_ASSIGN_OR_RETURN(auto hidden,
                      Dense(cpu0.NewSubScope("hidden"), features, 128, Activation::kRelu));
  AF_ASSIGN_OR_RETURN(auto logits, Dense(cpu0.NewSubScope("logits"), hidden, 10));
  auto loss = Mean(cpu0, SparseSoftmaxCrossEntropyWithLogits(cpu0, logits, y).loss);
  auto hits = Equal(cpu0, ArgMax(cpu0, logits, 1), Cast(cpu0, y, DType::kInt64));
  auto accuracy = Mean(cpu0, Cast(cpu0, hits, DType::kFloat32));
  // The gradients follow their forward ops' devices, each update its variable's.
  AF_ASSIGN_OR_RETURN(auto train_op, AdamOptimizer(0.003).Minimize(cpu0, loss));

  // One in-process session with two CPU devices; the variables are initialized once.
  SessionOptions options;
  options.device_count = {{"CPU", 2}};
  AF_ASSIGN_OR_RETURN(auto session, ClientSession::Create(root, options));
  AF_RETURN_IF_ERROR(session->Run({GlobalVariablesInitializer(root)}, nullptr));

  // 15 epochs of shuffled batches of 32 rows; the first step also reports its
  // cross-device traffic (RunMetadata::transfers, one entry per pair of devices).
  AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({train.features, train.labels}));
  auto batches =
      rows->Shuffle(train.features.dim(0), /*seed=*/1)->Batch(32)->Repeat(15)->MakeIterator();
  std::vector<Tensor> batch, out;
  RunMetadata metadata;
  for (bool first = true; batches->GetNext(&batch).ok(); first = false) {
    AF_RETURN_IF_ERROR(session->Run(RunOptions(), {{x, batch[0]}, {y, batch[1]}}, {loss, train_op},
                                    {}, &out, first ? &metadata : nullptr));
  }
  AF_RETURN_IF_ERROR(session->Run({{x, test.features}, {y, test.labels}}, {accuracy}, &out));
  std::printf("Test set accuracy: %.3f\n", out[0].data<float>()[0]);

  int64_t bytes = 0;
  for (const CrossDeviceTransfer& t : metadata.transfers) {
    std::printf("  %s -> %s: %lld tensors, %lld bytes\n", t.src_device.c_str(),
                t.dst_device.c_str(), static_cast<long long>(t.tensors),
                static_cast<long long>(t.bytes));
    bytes += t.bytes;
  }
  std::printf("Cross-device bytes per step: %lld\n", static_cast<long long>(bytes));
  return Status::OK();
}

int main() {
  if (Status s = TrainTwoTowerCnn(); !s.ok()) {
    std::cerr << "two_tower_cnn: " << s << "\n";
    return 1;
  }
  return 0;
}
