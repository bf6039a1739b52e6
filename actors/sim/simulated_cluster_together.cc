// SimulatedCluster::RunTogether: steps of several clients in flight at once.
#include <memory>
#include <optional>
#include <utility>

#include "actors/protocol/messages.h"
#include "actors/sim/simulated_cluster.h"
#include "actors/sim/simulated_cluster_impl.h"

namespace actorflow {

std::vector<StatusOr<std::vector<Tensor>>> SimulatedCluster::RunTogether(
    const std::vector<Step>& steps) {
  using Result = std::optional<StatusOr<std::vector<Tensor>>>;
  auto results = std::make_shared<std::vector<Result>>(steps.size());
  size_t open = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    StatusOr<Impl::TaskSlot*> slot = impl_->LiveSlot(s.task);
    if (!slot.ok()) {
      (*results)[i] = slot.status();
      continue;
    }
    RemoteStep step;
    step.session_id = s.session;
    for (const auto& [name, value] : s.feeds) {
      step.feed_names.push_back(name);
      step.feed_values.push_back(value);
    }
    step.fetches = s.fetches;
    step.targets = s.targets;
    step.timeout_in_ms = s.timeout_in_ms;
    step.want_metadata = false;
    ++open;
    // Each step's client is an actor of the simulation, scheduled by its coordinator
    // like every other, so the run stays deterministic.
    const std::string who = "a step on " + s.task.ToString();
    impl_->system->spawn([front = (*slot)->actors.front, step = std::move(step), results, i,
                          who](caf::event_based_actor* self) mutable {
      self->request(front, caf::infinite, remote_step_atom::value, std::move(step))
          .then(
              [results, i](RemoteStepResult& r) {
                if (r.status.ok()) {
                  (*results)[i] = std::move(r.outputs);
                } else {
                  (*results)[i] = std::move(r.status);
                }
              },
              [results, i, who](caf::error& e) {
                (*results)[i] = Unavailable(who + " got no answer: " + caf::to_string(e));
              });
    });
  }
  auto answered = [&] {
    for (const Result& r : *results) {
      if (!r.has_value()) return false;
    }
    return true;
  };
  Status stuck;
  for (int64_t timers = 0; open > 0 && !answered(); ++timers) {
    impl_->Drain();
    if (answered()) break;
    if (timers >= impl_->options.max_timers_per_call) {
      stuck = DeadlineExceeded("no answer after " + std::to_string(timers) +
                               " timers of the simulated cluster");
      break;
    }
    if (!impl_->sched->trigger_timeout()) {
      stuck = Internal("the simulated cluster went quiet without answering");
      break;
    }
  }
  std::vector<StatusOr<std::vector<Tensor>>> out;
  for (size_t i = 0; i < results->size(); ++i) {
    Result& r = (*results)[i];
    out.push_back(r.has_value() ? std::move(*r)
                                : StatusOr<std::vector<Tensor>>(
                                      Status(stuck.code(), "a step on " + steps[i].task.ToString() +
                                                               ": " + stuck.message())));
  }
  return out;
}

}  // namespace actorflow
