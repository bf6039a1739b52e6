// ParameterClientImpl (actors/ps/parameter_client_internal.h): getting shards from the
// ps tasks' fronts, standbys (ps_replicas 2), FailOver to a standby or to an empty
// replacement shard, and AdvanceGlobalStep, which keeps the global step monotone
// across such a recovery. The contracts are ParameterClient's
// (kernels/parameter_client.h) and ParameterClientOptions'
// (actors/ps/parameter_client_impl.h).
#include <algorithm>
#include <future>
#include <memory>

#include "actors/protocol/messages.h"
#include "actors/ps/parameter_client_internal.h"
#include "actors/ps/shard_fanout.h"
#include "kernels/ps/shard_config.h"
#include "actors/protocol/shard_messages.h"

namespace actorflow {
namespace parameter_client_internal {

StatusOr<ShardActor> ParameterClientImpl::GetShard(const FrontActor& front,
                                                   const std::string& name,
                                                   const std::string& task_name,
                                                   const Deadline& deadline) {
  caf::scoped_actor self{*system_};
  Status status = Unavailable("no answer");
  ShardActor shard;
  self->request(front, std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs())),
                get_shard_atom::value, name, ShardConfigFrom(options_))
      .receive(
          [&](Status& s, ShardActor& a) {
            status = std::move(s);
            shard = std::move(a);
          },
          [&](caf::error& e) {
            status = Unavailable(task_name + " did not hand out its parameter shard: " +
                                 caf::to_string(e));
          });
  AF_RETURN_IF_ERROR(status);
  return shard;
}

Status ParameterClientImpl::ConnectStandbys(const std::vector<ShardActor>& primaries,
                                            const std::vector<FrontActor>& fronts,
                                            const Deadline& deadline) {
  const int tasks = static_cast<int>(primaries.size());
  if (tasks < 2) {
    return InvalidArgument("--ps-replicas " + std::to_string(client_options_.ps_replicas) +
                           " needs at least 2 ps tasks (a standby lives on another task), the "
                           "cluster has " + std::to_string(tasks));
  }
  for (int i = 0; i < tasks; ++i) {
    const int host = (i + 1) % tasks;
    const std::string name = client_options_.shard_name + "/standby_of_" + std::to_string(i);
    AF_ASSIGN_OR_RETURN(ShardActor standby, GetShard(fronts[host], name, names_[host], deadline));
    caf::scoped_actor self{*system_};
    Status status = Unavailable(names_[i] + " did not accept its standby");
    self->request(primaries[i],
                  std::chrono::milliseconds(std::max<int64_t>(1, deadline.LeftMs())),
                  shard_standby_atom::value, caf::actor_cast<caf::actor>(standby))
        .receive([&](Status& s) { status = std::move(s); }, [](caf::error&) {});
    AF_RETURN_IF_ERROR(status);
    standbys_.push_back(standby);
    standby_names_.push_back(names_[host] + " (standby of " + names_[i] + ")");
    standby_hosts_.push_back(host);
  }
  failed_over_.assign(tasks, false);
  return Status::OK();
}

StatusOr<ParameterClient::FailOverReport> ParameterClientImpl::FailOver(int64_t timeout_ms) {
  FailOverReport report;
  const Deadline deadline = Deadline::After(std::max<int64_t>(timeout_ms, 1000));
  // Which shards are down, as the fan-out actor knows it.
  // Shared with the fan-out actor, which may run the task after a timeout here.
  auto down_now = std::make_shared<std::vector<Status>>();
  AF_RETURN_IF_ERROR(AskFanOut(
      [down_now](FanOutActor* self) { *down_now = self->state.down; }, deadline));
  const std::vector<Status> down = *down_now;
  std::vector<int> switched;
  std::vector<ShardActor> replacements(NumShards());
  std::vector<std::string> replacement_names(NumShards());
  std::vector<std::string> replacement_addresses(NumShards());
  for (int t = 0; t < NumShards(); ++t) {
    if (down[t].ok()) continue;
    if (!standbys_.empty() && !failed_over_[t]) {
      failed_over_[t] = true;
      replacements[t] = standbys_[t];
      replacement_names[t] = standby_names_[t];
      replacement_addresses[t] = addresses_[standby_hosts_[t]];
      ++report.to_standby;
    } else if (client_options_.replace_lost_shards && !replaced_[t]) {
      // The next ps task whose shard is still up hosts an empty replacement.
      int host = -1;
      for (int k = 1; k < NumShards() && host < 0; ++k) {
        if (down[(t + k) % NumShards()].ok()) host = (t + k) % NumShards();
      }
      if (host < 0) continue;
      const std::string name = client_options_.shard_name + "/replacement_of_" +
                               std::to_string(t);
      AF_ASSIGN_OR_RETURN(replacements[t], GetShard(fronts_[host], name, names_[host], deadline));
      replacement_names[t] = names_[host] + " (replacing " + names_[t] + ")";
      replacement_addresses[t] = addresses_[host];
      replaced_[t] = true;
      ++report.replaced;
    } else {
      continue;
    }
    switched.push_back(t);
  }
  if (switched.empty()) return report;
  AF_RETURN_IF_ERROR(AskFanOut(
      [switched, replacements, replacement_names, replacement_addresses](FanOutActor* self) {
        auto& st = self->state;
        for (int t : switched) {
          st.shards[t] = replacements[t];
          st.names[t] = replacement_names[t];
          st.addresses[t] = replacement_addresses[t];
          st.down[t] = Status::OK();
          self->monitor(replacements[t]);
        }
      },
      deadline));
  for (int t : switched) names_[t] = replacement_names[t];
  if (protocol_.worker() >= 0) {
    // The new shards know no members yet: join them.
    caf::actor who = worker_actor_;
    const int worker = protocol_.worker();
    auto call = Fan<Status>(switched, Deadline::After(setup_timeout_ms_), [&](size_t) {
      return std::make_tuple(shard_join_atom::value, int32_t{worker}, who);
    });
    AF_RETURN_IF_ERROR(WaitFor(call, Deadline::After(setup_timeout_ms_), "FailOver"));
    for (const Status& st : call->replies()) AF_RETURN_IF_ERROR(st);
  }
  return report;
}

Status ParameterClientImpl::AskFanOut(std::function<void(FanOutActor*)> fn,
                                      const Deadline& deadline) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  caf::anon_send(fanout_, FanOutTask{[fn, done](FanOutActor* self) {
                   fn(self);
                   done->set_value();
                 }});
  if (finished.wait_until(deadline.WaitUntil()) != std::future_status::ready) {
    return DeadlineExceeded("the client's fan-out actor did not answer in time");
  }
  return Status::OK();
}

Status ParameterClientImpl::AdvanceGlobalStep(int64_t at_least, int64_t timeout_ms) {
  const Deadline deadline = Deadline::After(timeout_ms);
  auto call = Fan<Status>(AllShards(), deadline, [&](size_t) {
    return std::make_tuple(shard_floor_atom::value, at_least);
  });
  AF_RETURN_IF_ERROR(WaitFor(call, deadline, "AdvanceGlobalStep"));
  for (const Status& s : call->replies()) AF_RETURN_IF_ERROR(s);
  return Status::OK();
}

}  // namespace parameter_client_internal
}  // namespace actorflow
