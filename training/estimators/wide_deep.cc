#include "training/estimators/wide_deep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>
#include <utility>

#include "graph/cooperative.h"
#include "graph/gradients.h"
#include "graph/ops.h"
#include "graph/sampled_ops.h"
#include "graph/scope.h"
#include "graph/sparse_ops.h"
#include "placement/replica_device_setter.h"
#include "training/estimators/layer_classes.h"
#include "training/estimators/model_dir.h"
#include "training/optimizers/optimizer.h"
#include "training/optimizers/variables.h"

namespace actorflow {
namespace {

constexpr int64_t kMaxIndicatorBuckets = 1000;
constexpr int64_t kEvalBatch = 4096;

// The distinct categorical columns of the options, by name (a column used by both
// parts is bucketized once).
std::map<std::string, CategoricalColumn> AllCategorical(const WideDeepOptions& o) {
  std::map<std::string, CategoricalColumn> all;
  for (const CategoricalColumn& c : o.linear_columns) all.emplace(c.name, c);
  for (const EmbeddingColumn& e : o.dnn_embedding_columns) all.emplace(e.categorical.name, e.categorical);
  for (const IndicatorColumn& i : o.dnn_indicator_columns) all.emplace(i.categorical.name, i.categorical);
  return all;
}

std::set<std::string> AllNumeric(const WideDeepOptions& o) {
  std::set<std::string> all(o.linear_numeric_columns.begin(), o.linear_numeric_columns.end());
  all.insert(o.dnn_numeric_columns.begin(), o.dnn_numeric_columns.end());
  return all;
}

// The rows as the graph's feeds want them: ids per categorical column, values per
// numeric column, 0/1 labels.
struct Columns {
  std::map<std::string, std::vector<int32_t>> ids;
  std::map<std::string, std::vector<float>> numeric;
  std::vector<float> labels;
  int64_t rows = 0;
};

StatusOr<Columns> Bucketize(const WideDeepOptions& o, const CsvData& data, const std::string& what) {
  Columns out;
  out.rows = data.features.dim(0);
  const int64_t f = data.features.dim(1);
  const float* x = data.features.data<float>();
  std::map<std::string, int64_t> index;
  for (int64_t j = 0; j < f; ++j) index[data.feature_names[j]] = j;
  const auto categorical = AllCategorical(o);
  for (const auto& [name, column] : categorical) out.ids[name].reserve(out.rows);
  std::map<std::string, double> values;
  for (int64_t r = 0; r < out.rows; ++r) {
    for (int64_t j = 0; j < f; ++j) values[data.feature_names[j]] = x[r * f + j];
    for (const auto& [name, column] : categorical) {
      StatusOr<int64_t> id = BucketOf(column, values);
      if (!id.ok()) return id.status().WithContext(what + " row " + std::to_string(r + 1));
      out.ids[name].push_back(static_cast<int32_t>(*id));
    }
    const int label = data.labels.data<int32_t>()[r];
    if (label != 0 && label != 1) {
      return InvalidArgument(what + " row " + std::to_string(r + 1) + ": label " +
                             std::to_string(label) + " is not 0 or 1");
    }
    out.labels.push_back(static_cast<float>(label));
  }
  for (const std::string& name : AllNumeric(o)) {
    std::vector<float>& v = out.numeric[name];
    for (int64_t r = 0; r < out.rows; ++r) v.push_back(x[r * f + index.at(name)]);
  }
  return out;
}

// Feeds of tower t: "tower_<t>/ids/<column>", "tower_<t>/numeric/<column>",
// "tower_<t>/label"; its outputs "tower_<t>/probability" and "tower_<t>/loss".
std::string TowerName(int tower) { return "tower_" + std::to_string(tower); }
std::string IdsFeed(int tower, const std::string& column) {
  return TowerName(tower) + "/ids/" + column;
}
std::string NumericFeed(int tower, const std::string& column) {
  return TowerName(tower) + "/numeric/" + column;
}

// A graph of one or more towers (one per worker task) over one set of variables; the
// scope owns it.
struct WorkerGraph {
  Scope root = Scope::NewRootScope();
  int64_t variable_elements = 0;
};

// The model's variables, made by the first tower that needs them.
struct ModelVariables {
  Output bias;
  std::map<std::string, Output> linear;   // by column
  std::map<std::string, Output> numeric;  // linear weights of numeric features
  std::map<std::string, Output> embedding;
  std::vector<std::unique_ptr<layers::Dense>> layers;  // hidden layers, then the logit
  std::vector<Output> wide() const {
    std::vector<Output> all = {bias};
    for (const auto& [name, v] : linear) all.push_back(v);
    for (const auto& [name, v] : numeric) all.push_back(v);
    return all;
  }
  std::vector<Output> deep() const {
    std::vector<Output> all;
    for (const auto& [name, v] : embedding) all.push_back(v);
    for (const auto& layer : layers) all.insert(all.end(), layer->variables().begin(), layer->variables().end());
    return all;
  }
};

Status CreateTables(const WideDeepOptions& o, const Scope& model, ModelVariables* vars) {
  const Scope wide = model.NewSubScope("linear");
  AF_ASSIGN_OR_RETURN(vars->bias, CreateVariable(wide, "bias", Tensor::FromVector<float>({0})));
  for (const CategoricalColumn& c : o.linear_columns) {
    AF_ASSIGN_OR_RETURN(vars->linear[c.name],
                        CreateVariable(wide, c.name, Fill(wide, Shape{c.buckets, 1}, 0.0f)));
  }
  for (const std::string& name : o.linear_numeric_columns) {
    AF_ASSIGN_OR_RETURN(vars->numeric[name],
                        CreateVariable(wide, name, Fill(wide, Shape{1, 1}, 0.0f)));
  }
  const Scope deep = model.NewSubScope("dnn");
  int64_t k = 0;
  for (const EmbeddingColumn& e : o.dnn_embedding_columns) {
    const double stddev = 1.0 / std::sqrt(static_cast<double>(e.dimension));
    AF_ASSIGN_OR_RETURN(
        vars->embedding[e.categorical.name],
        CreateVariable(deep, e.categorical.name + "_embedding",
                       TruncatedNormal(deep, Shape{e.categorical.buckets, e.dimension},
                                       DType::kFloat32, static_cast<int64_t>(o.seed) + 10 + k++,
                                       0, stddev)));
  }
  for (size_t layer = 0; layer <= o.hidden_units.size(); ++layer) {
    layers::DenseOptions dense;
    const bool logit = layer == o.hidden_units.size();
    dense.units = logit ? 1 : o.hidden_units[layer];
    dense.activation = logit ? Activation::kNone : Activation::kRelu;
    dense.seed = static_cast<int64_t>(o.seed) + 100 + static_cast<int64_t>(layer);
    vars->layers.push_back(std::make_unique<layers::Dense>(
        logit ? "dnn/logits" : "dnn/hidden_" + std::to_string(layer), dense));
  }
  return model.status();
}

// Tower t's logit and loss, built in `tower` (its worker's device).
StatusOr<Output> BuildWideDeepTower(const WideDeepOptions& o, const Scope& tower, int t,
                                    ModelVariables* vars) {
  std::map<std::string, Output> ids;
  for (const auto& [name, column] : AllCategorical(o)) {
    ids[name] = Placeholder(tower.WithOpName(IdsFeed(t, name)), DType::kInt32, Shape{-1});
  }
  std::map<std::string, Output> numeric;
  for (const std::string& name : AllNumeric(o)) {
    numeric[name] =
        Placeholder(tower.WithOpName(NumericFeed(t, name)), DType::kFloat32, Shape{-1, 1});
  }
  const Output label =
      Placeholder(tower.WithOpName(TowerName(t) + "/label"), DType::kFloat32, Shape{-1, 1});
  const Scope s = tower.NewSubScope(TowerName(t));
  Output wide_logit = Reshape(s, vars->bias, Tensor::FromVector<int32_t>({1, 1}));
  for (const CategoricalColumn& c : o.linear_columns) {
    wide_logit = Add(s, wide_logit, EmbeddingLookup(s, {vars->linear.at(c.name)}, ids.at(c.name)));
  }
  for (const std::string& name : o.linear_numeric_columns) {
    wide_logit = Add(s, wide_logit, MatMul(s, numeric.at(name), vars->numeric.at(name)));
  }
  std::vector<Input> inputs;
  for (const EmbeddingColumn& e : o.dnn_embedding_columns) {
    inputs.push_back(EmbeddingLookup(s, {vars->embedding.at(e.categorical.name)},
                                     ids.at(e.categorical.name)));
  }
  for (const IndicatorColumn& i : o.dnn_indicator_columns) {
    const int64_t n = i.categorical.buckets;
    std::vector<float> eye(n * n, 0.0f);
    for (int64_t d = 0; d < n; ++d) eye[d * n + d] = 1.0f;
    inputs.push_back(
        Gather(s, Const(s, Tensor::FromVector(eye, Shape{n, n})), ids.at(i.categorical.name)));
  }
  for (const std::string& name : o.dnn_numeric_columns) inputs.push_back(numeric.at(name));
  Output h = ConcatV2(s, inputs, 1);
  for (const auto& layer : vars->layers) {
    AF_ASSIGN_OR_RETURN(h, (*layer)(tower, h));
  }
  const Output logit = Add(s, wide_logit, h);
  Sigmoid(tower.WithOpName(TowerName(t) + "/probability"), logit);
  return Mean(tower.WithOpName(TowerName(t) + "/loss"),
              SigmoidCrossEntropyWithLogits(s, logit, label));
}

// A graph whose tower t runs on /job:worker/task:<workers[t]> (or beside the variables
// in one process), trained by "train" on the mean of the towers' losses: with several
// towers one step applies every tower's gradient at once (rows of one id summed).
Status BuildGraph(const WideDeepOptions& o, const std::vector<int>& workers, WorkerGraph* g) {
  ModelVariables vars;
  std::vector<Scope> towers;
  for (int worker : workers) {
    Scope tower = g->root;
    if (o.num_ps > 0) {
      ReplicaDeviceSetterOptions placement;
      placement.ps_tasks = o.num_ps;
      placement.worker_device = "/job:worker/task:" + std::to_string(worker);
      AF_ASSIGN_OR_RETURN(auto device_function, ReplicaDeviceSetter(placement));
      tower = tower.WithDeviceFunction(device_function);
    }
    towers.push_back(tower);
  }
  AF_RETURN_IF_ERROR(CreateTables(o, towers[0], &vars));
  Output loss;
  for (size_t t = 0; t < towers.size(); ++t) {
    AF_ASSIGN_OR_RETURN(Output tower_loss,
                        BuildWideDeepTower(o, towers[t], static_cast<int>(t), &vars));
    loss = loss.valid() ? Add(towers[0], loss, tower_loss) : tower_loss;
  }
  const Scope& model = towers[0];
  if (towers.size() > 1) {
    loss = Div(model, loss, static_cast<float>(towers.size()));
  }
  Identity(model.WithOpName("loss"), loss);
  const std::vector<Output> wide_vars = vars.wide(), deep_vars = vars.deep();
  std::vector<Output> all_vars = wide_vars;
  all_vars.insert(all_vars.end(), deep_vars.begin(), deep_vars.end());
  AF_ASSIGN_OR_RETURN(std::vector<Gradient> grads, GradientsWithSlices(model, {loss}, all_vars));
  Optimizer::GradientsAndVars wide_pairs, deep_pairs;
  for (size_t v = 0; v < all_vars.size(); ++v) {
    if (!grads[v].valid()) continue;
    (v < wide_vars.size() ? wide_pairs : deep_pairs).emplace_back(grads[v], all_vars[v]);
  }
  FtrlOptimizer ftrl(o.linear_learning_rate);
  AdagradOptimizer adagrad(o.dnn_learning_rate);
  AF_ASSIGN_OR_RETURN(Output wide_train, ftrl.ApplyGradientsWithSlices(
                                             model.NewSubScope("wide_train"), wide_pairs, Output()));
  AF_ASSIGN_OR_RETURN(Output deep_train, adagrad.ApplyGradientsWithSlices(
                                             model.NewSubScope("deep_train"), deep_pairs, Output()));
  NoOp(model.WithOpName("train").WithControlDependencies({wide_train, deep_train}));
  GlobalVariablesInitializer(model.WithOpName("init"));
  for (const Output& v : all_vars) g->variable_elements += v.shape().num_elements();
  return g->root.status();
}

// Tower t's feeds of `rows`, appended to *feeds; the distinct ids of each column, too.
void AddBatchFeeds(const Columns& data, const std::vector<int64_t>& rows, int t, FeedList* feeds,
                   std::vector<std::unordered_set<int32_t>>* distinct = nullptr) {
  const int64_t n = static_cast<int64_t>(rows.size());
  for (const auto& [name, ids] : data.ids) {
    std::vector<int32_t> batch(n);
    for (int64_t i = 0; i < n; ++i) batch[i] = ids[rows[i]];
    if (distinct != nullptr) distinct->emplace_back(batch.begin(), batch.end());
    feeds->emplace_back(IdsFeed(t, name), Tensor::FromVector(batch));
  }
  for (const auto& [name, values] : data.numeric) {
    std::vector<float> batch(n);
    for (int64_t i = 0; i < n; ++i) batch[i] = values[rows[i]];
    feeds->emplace_back(NumericFeed(t, name), Tensor::FromVector(batch, Shape{n, 1}));
  }
  std::vector<float> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = data.labels[rows[i]];
  feeds->emplace_back(TowerName(t) + "/label", Tensor::FromVector(labels, Shape{n, 1}));
}

struct WorkerStats {
  int64_t steps = 0;
  double bytes_pulled = 0, bytes_pushed = 0, rows_touched = 0;
  Status status;
};

// One shard's rows in batches, reshuffled at each pass.
class ShardBatches {
 public:
  ShardBatches(int64_t begin, int64_t end, int64_t batch, uint64_t seed)
      : order_(end - begin), batch_(batch), rng_(seed) {
    std::iota(order_.begin(), order_.end(), begin);
  }
  int64_t batches_per_pass() const {
    return (static_cast<int64_t>(order_.size()) + batch_ - 1) / batch_;
  }
  std::vector<int64_t> Next() {
    if (position_ == 0) std::shuffle(order_.begin(), order_.end(), rng_);
    const size_t stop = std::min(order_.size(), position_ + static_cast<size_t>(batch_));
    std::vector<int64_t> rows(order_.begin() + position_, order_.begin() + stop);
    position_ = stop == order_.size() ? 0 : stop;
    return rows;
  }

 private:
  std::vector<int64_t> order_;
  int64_t batch_;
  std::mt19937_64 rng_;
  size_t position_ = 0;
};

// Drives one session: each step feeds tower t a batch of shard shards[t].
// `restored_step`: the global step resumed from, which reseeds the shuffles.
void RunWideDeepWorker(const WideDeepOptions& o, const Columns& train, std::vector<int> shards,
                       int64_t restored_step, Session* session, WorkerStats* stats) {
  std::vector<ShardBatches> batches;
  for (int shard : shards) {
    batches.emplace_back(train.rows * shard / o.num_workers,
                         train.rows * (shard + 1) / o.num_workers, o.batch,
                         o.seed * 7919 + static_cast<uint64_t>(shard) +
                             static_cast<uint64_t>(restored_step) * 104729);
  }
  RunOptions run_options;
  run_options.timeout_in_ms = o.timeout_ms;
  const int64_t steps = o.epochs * batches[0].batches_per_pass();
  for (int64_t step = 0; step < steps; ++step) {
    FeedList feeds;
    std::vector<std::unordered_set<int32_t>> distinct;
    for (size_t t = 0; t < batches.size(); ++t) {
      AddBatchFeeds(train, batches[t].Next(), static_cast<int>(t), &feeds, &distinct);
    }
    RunMetadata meta;
    std::vector<Tensor> loss;
    Status s = session->Run(run_options, feeds, {"loss"}, {"train"}, &loss, &meta);
    if (!s.ok()) {
      stats->status = s.WithContext("wide & deep worker " + std::to_string(shards[0]) +
                                    " step " + std::to_string(step));
      return;
    }
    ++stats->steps;
    if (o.on_step) o.on_step(shards[0], step + 1, steps, loss[0].data<float>()[0]);
    for (const auto& d : distinct) stats->rows_touched += static_cast<double>(d.size());
    AddPsTraffic(meta, &stats->bytes_pulled, &stats->bytes_pushed);
  }
}

}  // namespace

double AreaUnderCurve(const std::vector<double>& scores, const std::vector<int>& labels) {
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  double positives = 0, rank_sum = 0;
  for (size_t k = 0; k < n;) {
    size_t j = k;
    while (j + 1 < n && scores[order[j + 1]] == scores[order[k]]) ++j;
    const double rank = (static_cast<double>(k + j) / 2.0) + 1.0;  // ties: their mean rank
    for (size_t m = k; m <= j; ++m) {
      if (labels[order[m]] == 1) {
        positives += 1;
        rank_sum += rank;
      }
    }
    k = j + 1;
  }
  const double negatives = static_cast<double>(n) - positives;
  if (positives == 0 || negatives == 0) return std::nan("");
  return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives);
}

StatusOr<WideDeepOptions> CtrDataColumns() {
  WideDeepOptions o;
  AF_ASSIGN_OR_RETURN(CategoricalColumn user, CategoricalColumnWithIdentity("user", 10000));
  AF_ASSIGN_OR_RETURN(CategoricalColumn item, CategoricalColumnWithIdentity("item", 100000));
  AF_ASSIGN_OR_RETURN(CategoricalColumn site, CategoricalColumnWithHashBucket("site", 1 << 18));
  AF_ASSIGN_OR_RETURN(CategoricalColumn category, CategoricalColumnWithIdentity("category", 100));
  AF_ASSIGN_OR_RETURN(CategoricalColumn hour, CategoricalColumnWithIdentity("hour", 24));
  AF_ASSIGN_OR_RETURN(CategoricalColumn cross, CrossedColumn({"category", "hour"}, 1 << 20));
  o.linear_columns = {user, item, site, category, hour, cross};
  o.linear_numeric_columns = {"price"};
  o.dnn_embedding_columns = {{user, 16}, {item, 16}, {category, 8}};
  o.dnn_indicator_columns = {{hour}};
  o.dnn_numeric_columns = {"price"};
  return o;
}

Status ValidateWideDeepOptions(const WideDeepOptions& o,
                               const std::vector<std::string>& feature_names) {
  const std::set<std::string> features(feature_names.begin(), feature_names.end());
  auto need = [&](const std::string& name, const std::string& column) -> Status {
    if (features.count(name)) return Status::OK();
    return InvalidArgument("wide & deep: column '" + column + "' reads feature '" + name +
                           "', which the data does not have");
  };
  if (o.linear_columns.empty() && o.linear_numeric_columns.empty() &&
      o.dnn_embedding_columns.empty() && o.dnn_indicator_columns.empty() &&
      o.dnn_numeric_columns.empty()) {
    return InvalidArgument("wide & deep: no feature columns");
  }
  for (const auto& [name, column] : AllCategorical(o)) {
    for (const std::string& raw : RawFeaturesOf(column)) AF_RETURN_IF_ERROR(need(raw, name));
  }
  for (const std::string& name : AllNumeric(o)) AF_RETURN_IF_ERROR(need(name, name));
  for (const EmbeddingColumn& e : o.dnn_embedding_columns) {
    if (e.dimension < 1) {
      return InvalidArgument("wide & deep: embedding column '" + e.categorical.name +
                             "' has dimension " + std::to_string(e.dimension));
    }
  }
  for (const IndicatorColumn& i : o.dnn_indicator_columns) {
    if (i.categorical.buckets > kMaxIndicatorBuckets) {
      return InvalidArgument("wide & deep: indicator column '" + i.categorical.name + "' has " +
                             std::to_string(i.categorical.buckets) + " buckets; at most " +
                             std::to_string(kMaxIndicatorBuckets) + " (use an embedding)");
    }
  }
  const bool deep = !o.dnn_embedding_columns.empty() || !o.dnn_indicator_columns.empty() ||
                    !o.dnn_numeric_columns.empty();
  if (!deep) return InvalidArgument("wide & deep: the deep part has no columns");
  for (int64_t units : o.hidden_units) {
    if (units < 1) return InvalidArgument("wide & deep: hidden units must be >= 1");
  }
  auto positive = [](const std::string& name, double v) -> Status {
    if (v > 0 && std::isfinite(v)) return Status::OK();
    return InvalidArgument("wide & deep: " + name + " must be a positive number");
  };
  AF_RETURN_IF_ERROR(positive("linear_learning_rate", o.linear_learning_rate));
  AF_RETURN_IF_ERROR(positive("dnn_learning_rate", o.dnn_learning_rate));
  if (o.batch < 1 || o.epochs < 1) {
    return InvalidArgument("wide & deep: batch and epochs must be >= 1");
  }
  if (o.num_workers < 1 || o.num_ps < 0 || (o.num_workers > 1 && o.num_ps == 0)) {
    return InvalidArgument("wide & deep: " + std::to_string(o.num_workers) + " workers and " +
                           std::to_string(o.num_ps) + " ps tasks: use 1 worker alone, or ps "
                           "tasks to share the variables");
  }
  return Status::OK();
}

StatusOr<WideDeepResult> TrainWideDeep(const WideDeepOptions& o, const CsvData& train_data,
                                       const CsvData& test_data,
                                       const WorkerSessionFactory& sessions) {
  AF_RETURN_IF_ERROR(ValidateWideDeepOptions(o, train_data.feature_names));
  if (test_data.feature_names != train_data.feature_names) {
    return InvalidArgument("wide & deep: the test file's columns differ from the training file's");
  }
  AF_ASSIGN_OR_RETURN(Columns train, Bucketize(o, train_data, "training"));
  AF_ASSIGN_OR_RETURN(Columns test, Bucketize(o, test_data, "test"));
  if (train.rows < o.num_workers) {
    return InvalidArgument("wide & deep: " + std::to_string(train.rows) +
                           " training rows for " + std::to_string(o.num_workers) + " workers");
  }
  // Async: a graph and a session per worker, each feeding its shard. Sync: one graph
  // with a tower per worker, driven by worker 0's session.
  std::vector<std::vector<int>> drivers;
  if (o.sync) {
    drivers.emplace_back();
    for (int w = 0; w < o.num_workers; ++w) drivers.back().push_back(w);
  } else {
    for (int w = 0; w < o.num_workers; ++w) drivers.push_back({w});
  }
  std::vector<std::unique_ptr<WorkerGraph>> graphs;
  std::vector<std::unique_ptr<Session>> worker_sessions;
  std::optional<ChiefCheckpoints> checkpoints;
  for (const std::vector<int>& towers : drivers) {
    graphs.push_back(std::make_unique<WorkerGraph>());
    AF_RETURN_IF_ERROR(BuildGraph(o, towers, graphs.back().get()));
    if (!checkpoints.has_value()) {
      AF_ASSIGN_OR_RETURN(checkpoints,
                          ChiefCheckpoints::Create(graphs[0]->root.graph(), o.checkpoint_dir));
    }
    AF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                        sessions(graphs.back()->root.graph(), towers[0]));
    worker_sessions.push_back(std::move(session));
  }
  AF_ASSIGN_OR_RETURN(const int64_t restored_step,
                      checkpoints->RestoreOrInitialize(worker_sessions[0].get(), "init"));
  std::vector<WorkerStats> stats(drivers.size());
  const auto start = std::chrono::steady_clock::now();
  // Cooperative threads: on a simulated cluster the workers take turns.
  RunThreadsCooperatively("wide & deep worker", static_cast<int>(drivers.size()), [&](int d) {
    RunWideDeepWorker(o, train, drivers[d], restored_step, worker_sessions[d].get(), &stats[d]);
  });
  WideDeepResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double pulled = 0, pushed = 0, rows = 0;
  for (const WorkerStats& s : stats) {
    AF_RETURN_IF_ERROR(s.status);
    result.steps += s.steps;
    pulled += s.bytes_pulled;
    pushed += s.bytes_pushed;
    rows += s.rows_touched;
  }
  result.global_step = restored_step + result.steps;
  const double steps = static_cast<double>(std::max<int64_t>(1, result.steps));
  result.bytes_pulled_per_step = pulled / steps;
  result.bytes_pushed_per_step = pushed / steps;
  result.rows_touched_per_step = rows / steps;
  result.dense_bytes_per_step = 2.0 * sizeof(float) * static_cast<double>(graphs[0]->variable_elements);

  // Evaluation on the test rows, by worker 0.
  std::vector<double> scores;
  std::vector<int> labels;
  double loss_sum = 0;
  for (int64_t begin = 0; begin < test.rows; begin += kEvalBatch) {
    std::vector<int64_t> rows_batch;
    for (int64_t r = begin; r < std::min(test.rows, begin + kEvalBatch); ++r) rows_batch.push_back(r);
    std::vector<Tensor> out;
    FeedList feeds;  // tower 0 alone: the session runs only what the fetches need
    AddBatchFeeds(test, rows_batch, 0, &feeds);
    AF_RETURN_IF_ERROR(worker_sessions[0]->Run(feeds, {"tower_0/probability", "tower_0/loss"},
                                               {}, &out));
    for (size_t i = 0; i < rows_batch.size(); ++i) {
      scores.push_back(out[0].data<float>()[i]);
      labels.push_back(static_cast<int>(test.labels[rows_batch[i]]));
    }
    loss_sum += out[1].data<float>()[0] * static_cast<double>(rows_batch.size());
  }
  int correct = 0;
  for (size_t i = 0; i < scores.size(); ++i) correct += (scores[i] >= 0.5) == (labels[i] == 1);
  result.auc = AreaUnderCurve(scores, labels);
  result.accuracy = scores.empty() ? 0 : static_cast<double>(correct) / scores.size();
  result.loss = scores.empty() ? 0 : loss_sum / static_cast<double>(scores.size());
  ServingSpec serving{"wide-deep", {}, {{"probability", TowerName(0) + "/probability"}}};
  for (const auto& [name, column] : AllCategorical(o)) serving.inputs[name] = IdsFeed(0, name);
  for (const std::string& name : AllNumeric(o)) serving.inputs[name] = NumericFeed(0, name);
  AF_RETURN_IF_ERROR(checkpoints->Save(worker_sessions[0].get(), result.global_step,
                                       *graphs[0]->root.graph(), serving));
  return result;
}

}  // namespace actorflow
