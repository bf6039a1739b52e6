// The distributed example of the TensorFlow 1.x slides, on a cluster of real
// processes: the parameters live on the parameter server, the workers compute.
//
//   with tf.device("/job:ps/task:0"):     weights = tf.Variable(...)
//   with tf.device("/job:worker/task:7"): ... logits = tf.matmul(input, weights) ...
//   with tf.Session("grpc://worker7.example.com:2222") as sess: sess.run(train_op)
//
// Here with two workers, data-parallel inside one graph: a linear model
// y = w * x + b (w, b: float32 [1] on /job:ps/task:0) fits y = 3x + 2; worker 0
// computes the loss and gradients of the first half of the data, worker 1 of the
// second half; the ps averages the gradients and applies them (gradient descent).
//
//   cluster_driver actorflow://HOST:PORT_OF_WORKER_0 [actorflow://HOST:PORT_OF_WORKER_1]
//
// Client 1 opens a session on worker 0's master, initializes the variables and
// trains; client 2 (when a second target is given) opens a session on worker 1's
// master and reads the variables, which outlived client 1's session. Prints
//   step 0: loss 24.34375
//   ...
//   client 1 (actorflow://...): w = 3.0000 b = 2.0000
//   client 2 (actorflow://...): w = 3.0000 b = 2.0000
// Exits 1 with one line "cluster_driver: <error>" when a step fails.
//
// Start the cluster first (examples/cluster/run_cluster.sh does all of it).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "actors/cluster/session_factory.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/scope.h"

namespace actorflow {
namespace {

constexpr int kSteps = 200;
constexpr float kLearningRate = 0.5f;

struct Model {
  std::vector<std::string> init;    // targets that initialize w and b
  std::vector<std::string> train;   // targets of one training step
  std::string loss;                 // mean loss over both workers' data, float32 []
};

// One worker's share: loss and gradients of its slice of the data (float32 [4]).
struct WorkerPart {
  Output loss;
  Output grad_w, grad_b;
};

StatusOr<WorkerPart> BuildWorker(const Scope& worker, Output w, Output b,
                                 const std::vector<float>& xs) {
  std::vector<float> ys;
  for (float x : xs) ys.push_back(3 * x + 2);
  auto x = Const(worker, Tensor::FromVector<float>(xs));
  auto y = Const(worker, Tensor::FromVector<float>(ys));
  auto prediction = Add(worker, Mul(worker, w, x), b);
  WorkerPart part;
  part.loss = Mean(worker, Square(worker, Sub(worker, prediction, y)));
  AF_ASSIGN_OR_RETURN(auto grads, Gradients(worker, {part.loss}, {w, b}));
  part.grad_w = grads[0];
  part.grad_b = grads[1];
  return part;
}

StatusOr<Model> BuildModel(const Scope& root) {
  // The parameters: on the parameter server.
  Scope ps = root.WithDevice("/job:ps/task:0");
  auto w = Variable(ps.WithOpName("w"), Shape{1}, DType::kFloat32);
  auto b = Variable(ps.WithOpName("b"), Shape{1}, DType::kFloat32);
  Assign(ps.WithOpName("w_init"), w, Const(ps, Tensor::FromVector<float>({0})));
  Assign(ps.WithOpName("b_init"), b, Const(ps, Tensor::FromVector<float>({0})));

  // The computation: each worker on its half of the data.
  AF_ASSIGN_OR_RETURN(WorkerPart part0, BuildWorker(root.WithDevice("/job:worker/task:0"), w, b,
                                                    {0.0f, 0.25f, 0.5f, 0.75f}));
  AF_ASSIGN_OR_RETURN(WorkerPart part1, BuildWorker(root.WithDevice("/job:worker/task:1"), w, b,
                                                    {1.0f, 1.25f, 1.5f, 1.75f}));

  // The update: averaged on the parameter server, where the variables are.
  auto half = Const(ps, 0.5f);
  auto lr = Const(ps, kLearningRate);
  ApplyGradientDescent(ps.WithOpName("train_w"), w, lr,
                       Mul(ps, Add(ps, part0.grad_w, part1.grad_w), half));
  ApplyGradientDescent(ps.WithOpName("train_b"), b, lr,
                       Mul(ps, Add(ps, part0.grad_b, part1.grad_b), half));
  Mul(ps.WithOpName("loss"), Add(ps, part0.loss, part1.loss), half);
  AF_RETURN_IF_ERROR(root.status());
  return Model{{"w_init", "b_init"}, {"train_w", "train_b"}, "loss"};
}

StatusOr<std::unique_ptr<Session>> Connect(const Graph* graph, const std::string& target) {
  SessionOptions options;
  options.target = target;
  return NewSession(graph, options);
}

Status PrintVariables(Session* session, const std::string& who) {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(session->Run({}, {"w", "b"}, {}, &out));
  std::printf("%s: w = %.4f b = %.4f\n", who.c_str(), out[0].data<float>()[0],
              out[1].data<float>()[0]);
  return Status::OK();
}

Status Run(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    return InvalidArgument("usage: cluster_driver actorflow://WORKER0 [actorflow://WORKER1]");
  }
  Scope root = Scope::NewRootScope();
  AF_ASSIGN_OR_RETURN(Model model, BuildModel(root));

  // Client 1: a session on worker 0's master (the slides' tf.Session("grpc://...")).
  {
    const std::string target = argv[1];
    AF_ASSIGN_OR_RETURN(auto session, Connect(root.graph(), target));
    AF_RETURN_IF_ERROR(session->Run({}, {}, model.init, nullptr));
    RunOptions options;
    options.timeout_in_ms = 10000;
    for (int step = 0; step <= kSteps; ++step) {
      std::vector<Tensor> out;
      AF_RETURN_IF_ERROR(session->Run(options, {}, {model.loss}, model.train, &out, nullptr)
                             .WithContext("step " + std::to_string(step)));
      if (step % 50 == 0) std::printf("step %d: loss %g\n", step, out[0].data<float>()[0]);
    }
    AF_RETURN_IF_ERROR(PrintVariables(session.get(), "client 1 (" + target + ")"));
  }
  // Client 2: another session, on worker 1's master. The variables live on the ps
  // task, not in client 1's session, so it sees what client 1 trained.
  if (argc == 3) {
    const std::string target = argv[2];
    AF_ASSIGN_OR_RETURN(auto session, Connect(root.graph(), target));
    AF_RETURN_IF_ERROR(PrintVariables(session.get(), "client 2 (" + target + ")"));
  }
  return Status::OK();
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  actorflow::Status status = actorflow::Run(argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "cluster_driver: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
