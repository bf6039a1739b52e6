// A training process for checkpoint_test: trains a tiny linear regression with
// gradient descent and saves checkpoints, so that the test can kill it in the middle
// of a save and resume it in a fresh process.
//
//   checkpoint_crash_helper train <dir> <steps> <values_out> [<expected_in>]
//     Restores from <dir>'s latest checkpoint if there is one (else initializes);
//     with <expected_in>, first checks that the restored variables equal those
//     written there (exit 2 if not, or if there was nothing to restore). Then trains
//     <steps> steps, saves "ckpt-<global step>" and writes the variables to
//     <values_out>.
//   checkpoint_crash_helper crash <dir> <steps> <values_out> <crash_bytes>
//     Initializes, trains <steps> steps, saves, writes <values_out>, trains <steps>
//     more, then saves again with ACTORFLOW_CHECKPOINT_TEST_CRASH_AFTER_BYTES set to
//     <crash_bytes>: that save kills the process with SIGKILL (exit 3 if it returns).
//
// Values file: one line per variable, "<name> <count> <v0> <v1> ...", each value
// printed with 17 significant digits (exact for float32, float64 and int64 < 2^53).
// Exit status: 0 done, 1 usage or runtime error (on stderr).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/scope.h"
#include "kernels/direct_session.h"
#include "training/checkpoint/checkpoint.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

struct Model {
  Scope root = Scope::NewRootScope();
  std::unique_ptr<Saver> saver;
  std::unique_ptr<Session> session;
  std::string global_step;
};

// y = x . [2, -1] + 0.5, fitted from w = [0.5, -0.3], b = [0.1].
Status BuildModel(Model* m) {
  const Scope& root = m->root;
  auto x = Const(root, {1.f, 2.f, -1.f, 0.5f, 3.f, -2.f, 0.f, 1.f, 2.f, 2.f, -1.f, -1.f}, {6, 2});
  auto y = Const(root, {0.5f, -1.5f, 8.5f, -0.5f, 2.5f, -0.5f}, {6, 1});
  AF_ASSIGN_OR_RETURN(Output w, CreateVariable(root, "w", Const(root, {0.5f, -0.3f}, {2, 1})));
  AF_ASSIGN_OR_RETURN(Output b, CreateVariable(root, "b", Tensor::FromVector<float>({0.1f})));
  AF_ASSIGN_OR_RETURN(Output step, CreateGlobalStep(root));
  auto loss = Mean(root, Square(root, Sub(root, BiasAdd(root, MatMul(root, x, w), b), y)));
  GradientDescentOptimizer sgd(0.05);
  AF_ASSIGN_OR_RETURN(Output train, sgd.Minimize(root.WithOpName("train"), loss, step));
  (void)train;
  GlobalVariablesInitializer(root.WithOpName("init"));
  if (!root.ok()) return root.status();
  AF_ASSIGN_OR_RETURN(m->saver, Saver::Create(root.graph(), SaverOptions()));
  AF_ASSIGN_OR_RETURN(m->session, NewDirectSession(root.graph()));
  m->global_step = step.name();
  return Status::OK();
}

Status Train(Model* m, int steps) {
  for (int i = 0; i < steps; ++i) AF_RETURN_IF_ERROR(m->session->Run({}, {}, {"train"}, nullptr));
  return Status::OK();
}

StatusOr<int64_t> GlobalStep(Model* m) {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(m->session->Run({}, {m->global_step}, {}, &out));
  return *out[0].data<int64_t>();
}

// The values file's text for the current variables.
StatusOr<std::string> ValuesText(Model* m) {
  std::vector<Tensor> out;
  AF_RETURN_IF_ERROR(m->session->Run({}, m->saver->var_names(), {}, &out));
  std::string text;
  for (size_t i = 0; i < out.size(); ++i) {
    text += m->saver->var_names()[i] + " " + std::to_string(out[i].NumElements());
    for (int64_t k = 0; k < out[i].NumElements(); ++k) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), " %.17g", out[i].ElementAsDouble(k));
      text += buffer;
    }
    text += "\n";
  }
  return text;
}

Status WriteValues(Model* m, const std::string& path) {
  AF_ASSIGN_OR_RETURN(std::string text, ValuesText(m));
  std::ofstream file(path);
  file << text;
  file.close();
  if (!file) return Unavailable("cannot write values file '" + path + "'");
  return Status::OK();
}

// Saves at the current global step; returns the checkpoint prefix.
StatusOr<std::string> SaveAtGlobalStep(Model* m, const std::string& dir) {
  AF_ASSIGN_OR_RETURN(int64_t step, GlobalStep(m));
  return m->saver->Save(m->session.get(), dir, step);
}

int Fail(const Status& s) {
  std::cerr << "checkpoint_crash_helper: " << s << "\n";
  return 1;
}

int RunTrain(const std::string& dir, int steps, const std::string& values_out,
             const std::string& expected_in) {
  Model m;
  if (Status s = BuildModel(&m); !s.ok()) return Fail(s);
  if (LatestCheckpoint(dir).ok()) {
    if (Status s = m.saver->Restore(m.session.get(), dir); !s.ok()) return Fail(s);
  } else if (!expected_in.empty()) {
    std::cerr << "checkpoint_crash_helper: no checkpoint to resume from in '" << dir << "'\n";
    return 2;
  } else if (Status s = m.session->Run({}, {}, {"init"}, nullptr); !s.ok()) {
    return Fail(s);
  }
  if (!expected_in.empty()) {
    std::ifstream file(expected_in);
    std::stringstream expected;
    expected << file.rdbuf();
    auto restored = ValuesText(&m);
    if (!restored.ok()) return Fail(restored.status());
    if (!file || *restored != expected.str()) {
      std::cerr << "checkpoint_crash_helper: restored variables\n" << *restored
                << "differ from those in '" << expected_in << "':\n" << expected.str();
      return 2;
    }
  }
  if (Status s = Train(&m, steps); !s.ok()) return Fail(s);
  auto saved = SaveAtGlobalStep(&m, dir);
  if (!saved.ok()) return Fail(saved.status());
  if (Status s = WriteValues(&m, values_out); !s.ok()) return Fail(s);
  std::cout << "saved " << *saved << "\n";
  return 0;
}

int RunCrash(const std::string& dir, int steps, const std::string& values_out,
             const std::string& crash_bytes) {
  Model m;
  if (Status s = BuildModel(&m); !s.ok()) return Fail(s);
  if (Status s = m.session->Run({}, {}, {"init"}, nullptr); !s.ok()) return Fail(s);
  if (Status s = Train(&m, steps); !s.ok()) return Fail(s);
  auto saved = SaveAtGlobalStep(&m, dir);
  if (!saved.ok()) return Fail(saved.status());
  if (Status s = WriteValues(&m, values_out); !s.ok()) return Fail(s);
  std::cout << "saved " << *saved << "\n" << std::flush;
  if (Status s = Train(&m, steps); !s.ok()) return Fail(s);
  ::setenv(kCheckpointCrashEnvVar, crash_bytes.c_str(), 1);
  auto crashed = SaveAtGlobalStep(&m, dir);
  std::cerr << "checkpoint_crash_helper: the save meant to crash returned "
            << (crashed.ok() ? *crashed : crashed.status().ToString()) << "\n";
  return 3;
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 4 && args[0] == "train" && args.size() <= 5) {
    return actorflow::RunTrain(args[1], std::atoi(args[2].c_str()), args[3],
                               args.size() == 5 ? args[4] : "");
  }
  if (args.size() == 5 && args[0] == "crash") {
    return actorflow::RunCrash(args[1], std::atoi(args[2].c_str()), args[3], args[4]);
  }
  std::cerr << "usage: checkpoint_crash_helper train <dir> <steps> <values_out> [<expected_in>]\n"
               "       checkpoint_crash_helper crash <dir> <steps> <values_out> <crash_bytes>\n";
  return 1;
}
