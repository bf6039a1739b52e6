// In-graph replication, step by step: one client builds one graph with the Iris
// classifier replicated into two towers, one per CPU device of an in-process actor
// session, the variables on CPU 0; each step splits its batch over the towers,
// averages their gradients beside the variables and applies them once.
//   1. build the towers; 2. open a session with two CPU devices and initialize;
//   3. train: every Run of "train" is one replicated step; 4. show where one step ran;
//   5. evaluate on the test set with tower 0.
//
//   bazel run //examples/in_graph [-- TRAIN.csv TEST.csv]
//
// Prints the devices of each tower's nodes, then "Test set accuracy: 0.967".
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "training/data/csv_dataset.h"
#include "training/data/dataset.h"
#include "training/distributed/in_graph_replication.h"

namespace actorflow {
namespace {

// examples/data/<file> under `bazel run`'s workspace, the runfiles, or the working
// directory.
std::string BundledData(const std::string& file) {
  std::vector<std::string> candidates;
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    candidates.push_back(std::string(workspace) + "/examples/data/" + file);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    candidates.push_back(std::string(exe, n) + ".runfiles/actorflow/examples/data/" + file);
  }
  candidates.push_back("examples/data/" + file);
  for (const std::string& path : candidates) {
    if (std::ifstream(path).is_open()) return path;
  }
  return candidates.back();  // LoadCsv then names it in its error
}

Status Run(int argc, char** argv) {
  const std::string train_path = argc > 1 ? argv[1] : BundledData("iris_training.csv");
  const std::string test_path = argc > 2 ? argv[2] : BundledData("iris_test.csv");
  AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv(train_path));
  AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv(test_path));

  // 1. The model (DNNClassifier's: hidden layers [10, 10], 3 classes), its variables
  // on CPU 0, a tower on each of CPU 0 and CPU 1. On a cluster the devices would be
  // "/job:ps/task:0" and "/job:worker/task:0", "/job:worker/task:1".
  DNNModelSpec spec;
  spec.feature_columns = NumericColumns(train.feature_names);
  spec.hidden_units = {10, 10};
  spec.n_classes = 3;
  InGraphReplication replication;
  replication.ps_devices = {"/cpu:0"};
  replication.tower_devices = {"/cpu:0", "/cpu:1"};
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> adam, MakeOptimizer("adam", 0.03));
  Scope root = Scope::NewRootScope();
  AF_ASSIGN_OR_RETURN(InGraphModel model,
                      BuildInGraphModel(root, spec, /*seed=*/1, replication, adam.get()));

  // 2. One session runs the whole graph: two CPU devices, one actor each.
  SessionOptions session_options;
  session_options.device_count = {{"CPU", 2}};
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(root.graph(), session_options));
  AF_RETURN_IF_ERROR(session->Run({}, {}, {kInGraphInit}, nullptr));

  // 3. Train: batches of 64 rows, 32 per tower, reshuffled every pass.
  AF_ASSIGN_OR_RETURN(auto rows, Dataset::FromTensorSlices({train.features, train.labels}));
  std::shared_ptr<const Dataset> shuffled = rows->Shuffle(train.features.dim(0), 1)->Batch(64)->Repeat();
  std::unique_ptr<Iterator> batches = shuffled->MakeIterator();
  double loss = 0.0;
  for (int step = 1; step <= 400; ++step) {
    Element batch;  // features float32 [64, 4], labels int32 [64]
    AF_RETURN_IF_ERROR(batches->GetNext(&batch));
    AF_ASSIGN_OR_RETURN(FeedList feeds, SplitBatchOverTowers(model, batch[0], batch[1]));
    std::vector<Tensor> out;
    AF_RETURN_IF_ERROR(session->Run(feeds, {kInGraphLoss}, {kInGraphTrain}, &out));
    loss = out[0].ElementAsDouble(0);
  }
  std::printf("Trained 400 replicated steps, last batch loss %.4f\n", loss);

  // 4. Where one step ran: each tower's nodes on its device, the averaging and the
  // updates beside the variables.
  AF_ASSIGN_OR_RETURN(FeedList feeds, SplitBatchOverTowers(model, train.features, train.labels));
  RunOptions trace;
  trace.trace_level = RunOptions::TraceLevel::kFullTrace;
  RunMetadata metadata;
  std::vector<Tensor> unused;
  AF_RETURN_IF_ERROR(session->Run(trace, feeds, {}, {kInGraphTrain}, &unused, &metadata));
  std::map<std::string, std::set<std::string>> devices;  // group -> devices
  for (const NodeExecStats& node : metadata.step_stats) {
    const std::string group = node.node_name.substr(0, node.node_name.find('/'));
    if (group.rfind("tower_", 0) == 0 || group == "average_gradients" || group == "Adam") {
      devices[group].insert(node.device);
    }
  }
  for (const auto& [group, names] : devices) {
    for (const std::string& device : names) std::printf("%s ran on %s\n", group.c_str(), device.c_str());
  }

  // 5. Evaluate with tower 0 on the whole test set.
  const InGraphTower& tower = model.towers.front();
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session->Run({{tower.features.name(), test.features},
                                   {tower.labels.name(), test.labels}},
                                  {tower.class_ids.name()}, {}, &out));
  int64_t correct = 0;
  for (int64_t i = 0; i < test.labels.dim(0); ++i) {
    if (out[0].data<int64_t>()[i] == test.labels.data<int32_t>()[i]) ++correct;
  }
  std::printf("Test set accuracy: %.3f\n",
              static_cast<double>(correct) / static_cast<double>(test.labels.dim(0)));
  return session->Close();
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  actorflow::Status status = actorflow::Run(argc, argv);
  if (!status.ok()) {
    std::cerr << "in_graph: " << status << "\n";
    return 1;
  }
  return 0;
}
