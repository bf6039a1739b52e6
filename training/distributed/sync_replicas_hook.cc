// The hook of SyncReplicasOptimizer (sync_replicas_optimizer.h): what every worker
// and the chief run once the model is ready, and the chief's sync thread.
#include <cstdio>
#include <utility>

#include "training/data/coordinator.h"
#include "training/distributed/sync_replicas_optimizer.h"

namespace actorflow {
namespace {

class SyncReplicasHook : public SessionRunHook {
 public:
  SyncReplicasHook(SyncReplicasOptimizer* optimizer, bool is_chief, int num_tokens)
      : optimizer_(optimizer), is_chief_(is_chief), num_tokens_(num_tokens) {}

  std::string name() const override { return "SyncReplicasHook"; }

  Status Begin(Graph* graph) override {
    if (!is_chief_) return Status::OK();
    const int tokens = num_tokens_ < 0 ? optimizer_->replicas_to_aggregate() : num_tokens_;
    if (tokens == 0) return Status::OK();
    AF_ASSIGN_OR_RETURN(init_tokens_op_, optimizer_->InitTokensOp(graph, tokens));
    return Status::OK();
  }

  Status AfterCreateSession(Session* session, Coordinator* coord) override {
    AF_RETURN_IF_ERROR(Run(session, optimizer_->local_step_init_op(), "the local step's start"));
    if (!is_chief_) return Status::OK();
    AF_RETURN_IF_ERROR(Run(session, optimizer_->chief_init_op(), "the accumulators' steps"));
    if (!init_tokens_op_.empty()) {
      AF_RETURN_IF_ERROR(Run(session, init_tokens_op_, "the starting tokens"));
    }
    // The sync op waits inside the accumulators until enough gradients came; it ends
    // with the session (its Close aborts the step) or with an error, which stops
    // training with the op named. No step deadline of its own: an aggregate taken
    // by a step cut short would be lost.
    const std::string sync_op = optimizer_->sync_op();
    coord->StartThread("SyncReplicasOptimizer's chief queue runner", [session, coord, sync_op] {
      while (!coord->ShouldStop()) {
        Status s = session->Run(RunOptions(), {}, {}, {sync_op}, nullptr, nullptr);
        if (s.ok()) continue;
        if (!coord->ShouldStop()) {
          coord->RequestStop(s, "SyncReplicasOptimizer's chief queue runner (op " + sync_op + ")");
        }
        return;
      }
    });
    return Status::OK();
  }

  Status End(Session* session) override {
    if (!is_chief_) return Status::OK();
    std::vector<Tensor> out;
    Status s = session->Run({}, {optimizer_->dropped_gradients()}, {}, &out);
    if (s.ok() && out.size() == 1) {
      std::fprintf(stderr, "SyncReplicasOptimizer: %lld stale gradients were dropped\n",
                   static_cast<long long>(out[0].data<int64_t>()[0]));
    }
    return Status::OK();
  }

 private:
  static Status Run(Session* session, const std::string& op, const std::string& what) {
    Status s = session->Run({}, {}, {op}, nullptr);
    if (s.ok()) return s;
    return Status(s.code(), "SyncReplicasOptimizer: setting " + what + " (op " + op +
                                ") failed: " + s.message());
  }

  SyncReplicasOptimizer* optimizer_;
  bool is_chief_;
  int num_tokens_;
  std::string init_tokens_op_;
};

}  // namespace

std::shared_ptr<SessionRunHook> SyncReplicasOptimizer::MakeSessionRunHook(bool is_chief,
                                                                          int num_tokens) {
  return std::make_shared<SyncReplicasHook>(this, is_chief, num_tokens);
}

}  // namespace actorflow
