// DataParallelJob: every worker of a data-parallel run on its own thread of this
// process (training/distributed/data_parallel.h).
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "training/distributed/data_parallel.h"

namespace actorflow {

DataParallelJob::DataParallelJob(DataParallelOptions options,
                                 ParameterClientFactory client_factory, LabeledData train,
                                 LabeledData test)
    : options_(std::move(options)),
      client_factory_(std::move(client_factory)),
      train_(std::move(train)),
      test_(std::move(test)) {}

DataParallelJob::~DataParallelJob() = default;

void DataParallelJob::set_delay(int worker, double delay_factor, int64_t delay_ms) {
  delays_[worker] = {delay_factor, delay_ms};
}

void DataParallelJob::StopWorker(int worker) {
  std::lock_guard<std::mutex> lock(mu_);
  if (worker < 0 || worker >= static_cast<int>(stop_requested_.size())) return;
  stop_requested_[worker] = true;
  if (drivers_[worker] != nullptr) drivers_[worker]->Stop();
}

StatusOr<DataParallelResult> DataParallelJob::Run() {
  AF_RETURN_IF_ERROR(ValidateDataParallelOptions(options_));
  if (!client_factory_) return InvalidArgument("data-parallel job: no parameter client factory");
  const auto start = std::chrono::steady_clock::now();
  const int num_workers = options_.ps.total_replicas;
  {
    std::lock_guard<std::mutex> lock(mu_);
    drivers_.assign(num_workers, nullptr);
    stop_requested_.assign(num_workers, false);
  }
  // A worker that finished keeps its client until the end, so that the shards do not
  // count it as lost; a stopped or failed worker's client goes with it.
  std::vector<std::unique_ptr<ParameterClient>> clients(num_workers);
  std::vector<std::unique_ptr<WorkerDriver>> drivers(num_workers);
  std::vector<WorkerReport> reports(num_workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < num_workers; ++w) {
    threads.emplace_back([this, w, &clients, &drivers, &reports] {
      reports[w].worker = w;
      StatusOr<std::unique_ptr<ParameterClient>> client = client_factory_(w);
      if (!client.ok()) {
        reports[w].status = client.status().WithContext("worker " + std::to_string(w));
        return;
      }
      WorkerOptions worker_options;
      worker_options.worker = w;
      worker_options.progress = progress_;
      if (w == 0 && evaluate_each_epoch_) worker_options.evaluate_each_epoch = &test_;
      auto delay = delays_.find(w);
      if (delay != delays_.end()) {
        worker_options.delay_factor = delay->second.first;
        worker_options.delay_ms = delay->second.second;
      }
      StatusOr<std::unique_ptr<WorkerDriver>> driver =
          WorkerDriver::Create(options_, worker_options, train_, client->get());
      if (!driver.ok()) {
        reports[w].status = driver.status().WithContext("worker " + std::to_string(w));
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_requested_[w]) (*driver)->Stop();
        drivers_[w] = driver->get();
      }
      reports[w] = (*driver)->Run();
      {
        std::lock_guard<std::mutex> lock(mu_);
        drivers_[w] = nullptr;
      }
      if (reports[w].status.ok()) clients[w] = std::move(*client);
      drivers[w] = std::move(*driver);
    });
  }
  for (std::thread& t : threads) t.join();

  int finisher = -1;
  for (int w = 0; w < num_workers && finisher < 0; ++w) {
    if (clients[w] != nullptr) finisher = w;
  }
  if (finisher < 0) return reports[0].status;
  const int64_t offset = drivers[0] != nullptr ? drivers[0]->global_step_offset() : 0;
  AF_ASSIGN_OR_RETURN(DataParallelResult result,
                      FinishDataParallel(options_, clients[finisher].get(),
                                         drivers[finisher]->model(), test_, offset));
  for (const WorkerReport& report : reports) {
    if (!report.status.ok() &&
        std::find(result.workers_lost.begin(), result.workers_lost.end(), report.worker) ==
            result.workers_lost.end()) {
      result.workers_lost.push_back(report.worker);
    }
  }
  std::sort(result.workers_lost.begin(), result.workers_lost.end());
  result.workers = std::move(reports);
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace actorflow
