#include "actors/cluster/server.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include <caf/io/all.hpp>

#include "actors/cluster/driver_environment.h"
#include "actors/cluster/graph_handoff.h"
#include "actors/ps/bulk_gradients.h"
#include "actors/transport/cluster_transport.h"
#include "actors/transport/connect.h"
#include "actors/runtime/device_supervisor.h"
#include "actors/protocol/wire.h"
#include "actors/scheduler/spinning_scheduler.h"
#include "actors/cluster/step_channel.h"
#include "actors/cluster/task_actors.h"
#include "actors/runtime/task_services.h"

namespace actorflow {
namespace {

class ServerImpl : public Server {
 public:
  ServerImpl() = default;
  ~ServerImpl() override { Stop(); }

  Status Init(const ServerOptions& options) {
    auto address = options.cluster.Address(options.task);
    if (!address.ok()) return address.status();
    host_ = address->host;
    const uint16_t want_port =
        options.port_override >= 0 ? static_cast<uint16_t>(options.port_override) : address->port;
    task_name_ = ClusterSpec::TaskName(options.task);
    ConfigureClusterTransport(cfg_, options.transport);
    // One scheduler thread more than devices (and no fewer than the cores): a device
    // runs its kernels on a scheduler thread until they end, so with every device busy
    // a thread is still free for the front's heartbeat answers, the masters and the
    // parameter shards.
    const size_t devices = static_cast<size_t>(std::max(1, options.cpus));
    const size_t threads = std::max<size_t>(std::thread::hardware_concurrency(), devices + 1);
    ConfigureScheduler(cfg_, SchedulerOptions{threads, options.scheduler_spin_us});
    cfg_.set("logger.console", caf::atom("none"));
    system_ = std::make_unique<caf::actor_system>(cfg_);
    TaskBulkChannel bulk;
    if (options.bulk_min_bytes > 0 && !system_->has_openssl_manager()) {
      AF_ASSIGN_OR_RETURN(bulk, OpenBulkChannel(options));
    }
    if (options.step_channel && !system_->has_openssl_manager()) {
      StepChannelOptions so;
      so.max_frame_bytes = static_cast<uint64_t>(options.transport.max_message_bytes);
      so.limits = options.requests;
      so.run_on_connection_thread = options.cpus <= 1;
      so.spin_us = options.scheduler_spin_us;
      so.shared_memory = options.bulk_shared_memory;
      auto steps = StepChannelServer::Listen(*system_, host_, task_name_, so);
      if (!steps.ok()) return steps.status();
      step_server_ = std::move(steps).value();
      bulk.step_port = step_server_->port();
    }
    task_ = SpawnTaskActors(*system_, options, ConnectorActor(), bulk);
    if (step_server_) step_server_->Serve(task_.services);
    {
      std::lock_guard<std::mutex> lock(bulk_roster_->mu);
      bulk_roster_->roster = task_.roster;
      bulk_roster_->services = task_.services;
    }
    // SO_REUSEADDR: a restarted task binds its port again at once; a port with a live
    // listener still fails, so "port in use" is still reported.
    auto published = PublishOnTransport(task_.front, want_port, host_);
    if (!published) {
      return Unavailable("cannot listen on " + host_ + ":" + std::to_string(want_port) + " for " +
                         task_name_ + " (port in use?): " + system_->render(published.error()));
    }
    port_ = *published;
    graph_handoff::AddTask(host_ + ":" + std::to_string(port_));
    return Status::OK();
  }

  uint16_t port() const override { return port_; }
  std::string host() const override { return host_; }

  Status failure() const override {
    if (!task_.roster) return Status::OK();
    std::lock_guard<std::mutex> lock(task_.roster->mu);
    return task_.roster->failure;
  }

  void SetCluster(const ClusterSpec& cluster) override { task_.SetCluster(cluster); }

  BulkChannelStats bulk_received() const override {
    return bulk_receiver_ ? bulk_receiver_->stats() : BulkChannelStats();
  }
  std::string bulk_endpoint() const override {
    return bulk_receiver_ ? bulk_receiver_->endpoint() : std::string();
  }
  BulkChannelStats bulk_sent() const override {
    return bulk_sender_ ? bulk_sender_->stats() : BulkChannelStats();
  }

  uint16_t step_port() const override { return step_server_ ? step_server_->port() : 0; }
  int64_t steps_on_step_channel() const override {
    return step_server_ ? step_server_->steps() + step_server_->in_process_steps() : 0;
  }

  void Stop() override {
    if (!system_) return;
    if (port_ != 0) graph_handoff::RemoveTask(host_ + ":" + std::to_string(port_));
    // Over TLS the acceptor closes with the system (CAF 0.17's OpenSSL unpublish
    // header does not compile).
    if (port_ != 0 && !system_->has_openssl_manager()) {
      system_->middleman().unpublish(task_.front, port_);
    }
    StopTaskActors(task_);
    // Its connection threads send to the master actors and may run their jobs.
    step_server_.reset();
    // Before the actor system goes: the receiver's threads and the sender's fallbacks
    // send to its actors.
    bulk_receiver_.reset();
    if (bulk_sender_) bulk_sender_->Shutdown();
    ShutDownClusterSystem(system_);
  }

 private:
  // The devices a bulk frame may address: the roster, once the task is spawned.
  struct BulkRoster {
    std::mutex mu;
    std::shared_ptr<DeviceRoster> roster;
    std::shared_ptr<TaskServices> services;  // its parameter shards
  };

  // Listens for bulk frames on this task's host and hands each to its device as a
  // TensorDelivery, the message a CAF Send brings.
  StatusOr<TaskBulkChannel> OpenBulkChannel(const ServerOptions& options) {
    BulkReceiverOptions ro;
    ro.max_tensor_bytes = options.transport.max_message_bytes;
    auto roster = bulk_roster_;
    auto receiver = BulkReceiver::Listen(host_, ro, [roster](BulkFrame f) -> Status {
      const std::string shard_name = ShardOfBulkAddress(f.device);
      if (!shard_name.empty()) {
        ShardActor shard;
        {
          std::lock_guard<std::mutex> lock(roster->mu);
          if (roster->services) {
            std::lock_guard<std::mutex> shards_lock(roster->services->mu);
            auto it = roster->services->shards.find(shard_name);
            if (it != roster->services->shards.end()) shard = it->second;
          }
        }
        if (!shard) {
          return NotFound("bulk frame for shard '" + shard_name + "', not one of this task's");
        }
        caf::anon_send(shard, shard_bulk_atom::value, std::move(f.key), std::move(f.tensor));
        return Status::OK();
      }
      DeviceActor target;
      {
        std::lock_guard<std::mutex> lock(roster->mu);
        if (roster->roster) {
          std::lock_guard<std::mutex> devices_lock(roster->roster->mu);
          for (const DevicePeer& d : roster->roster->devices) {
            if (d.name == f.device) target = d.actor;
          }
        }
      }
      if (!target) return NotFound("bulk frame for device " + f.device + ", not one of this task's");
      caf::anon_send(target, tensor_atom::value,
                     TensorDelivery{f.step_id, std::move(f.key), std::move(f.tensor)});
      return Status::OK();
    });
    if (!receiver.ok()) return receiver.status().WithContext(task_name_);
    bulk_receiver_ = std::move(receiver).value();
    BulkSenderOptions so;
    so.shared_memory = options.bulk_shared_memory;
    bulk_sender_ = std::make_shared<BulkSender>(so);
    TaskBulkChannel bulk;
    bulk.sender = bulk_sender_;
    bulk.endpoint = bulk_receiver_->endpoint();
    bulk.min_bytes = options.bulk_min_bytes;
    return bulk;
  }

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> system_;
  TaskActors task_;
  std::string host_;
  std::string task_name_;
  uint16_t port_ = 0;
  std::shared_ptr<BulkRoster> bulk_roster_ = std::make_shared<BulkRoster>();
  std::unique_ptr<BulkReceiver> bulk_receiver_;
  std::shared_ptr<BulkSender> bulk_sender_;
  std::unique_ptr<StepChannelServer> step_server_;
};

}  // namespace

StatusOr<std::unique_ptr<Server>> Server::Start(const TfConfig& config) {
  if (DriverEnvironment* environment = CurrentDriverEnvironment()) {
    return environment->StartServer(config);
  }
  ServerOptions options;
  options.cluster = config.cluster;
  options.task = config.task;
  return Start(options);
}

StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto server = std::make_unique<ServerImpl>();
  AF_RETURN_IF_ERROR(server->Init(options));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace actorflow
