// Wide & deep (TensorFlow 1.x's DNNLinearCombinedClassifier) for binary labels: a
// linear model over categorical columns, their crosses and numeric features (the
// wide part, FTRL) plus a DNN over embedding, indicator and numeric columns (the deep
// part, Adagrad), their logits summed. Every categorical weight and embedding table is
// read with EmbeddingLookup and updated by rows: on ps tasks a step moves only the rows
// of the ids in its batch.
//
//   AF_ASSIGN_OR_RETURN(WideDeepOptions options, CtrDataColumns());  // ctr_data.py
//   AF_ASSIGN_OR_RETURN(CsvData train, LoadCsv("train.csv", {"clicked"}));
//   AF_ASSIGN_OR_RETURN(CsvData test, LoadCsv("test.csv", {"clicked"}));
//   AF_ASSIGN_OR_RETURN(auto result, TrainWideDeep(options, train, test, LocalSessions()));
//   result.auc;
//
// Training: `epochs` passes over the training rows in batches of `batch`, reshuffled
// each pass (with `seed`). With num_workers W > 1 the rows are cut into W contiguous
// shards, the variables on the ps tasks (ReplicaDeviceSetter), and either W workers
// train between-graph and asynchronously (each its own graph), or (sync) one graph
// has a tower per worker and each step averages the W towers' losses: their row
// gradients meet on the ps tasks, rows of one id summed. The labels are the CSV's
// label column, 0 or 1.
//
// Serving: --checkpoint-dir's serving.json maps each categorical column's name to
// tower 0's ids placeholder (int32 [n], the ids BucketOf gives: a hashed or crossed
// column's client sends bucket ids), each numeric column's name to its values
// (float [n, 1]), and "probability" to tower 0's P(label = 1) [n, 1].
//
// Thread safety: TrainWideDeep runs the workers on threads of its own.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_WIDE_DEEP_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_WIDE_DEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/status.h"
#include "training/data/csv_dataset.h"
#include "training/estimators/categorical_columns.h"
#include "training/estimators/worker_sessions.h"

namespace actorflow {

struct WideDeepOptions {
  std::vector<CategoricalColumn> linear_columns;
  std::vector<std::string> linear_numeric_columns;
  std::vector<EmbeddingColumn> dnn_embedding_columns;
  std::vector<IndicatorColumn> dnn_indicator_columns;  // at most 1000 buckets each
  std::vector<std::string> dnn_numeric_columns;
  std::vector<int64_t> hidden_units = {64, 32};
  double linear_learning_rate = 2.0;   // FTRL
  double dnn_learning_rate = 0.05;     // Adagrad (TensorFlow's default)
  int64_t batch = 256;
  int64_t epochs = 1;
  uint64_t seed = 1;
  int num_ps = 0;       // 0: one process
  int num_workers = 1;
  // With several workers: false, between-graph and asynchronous; true, one graph with
  // a tower per worker whose gradients every step applies at once (sparse rows summed
  // by id), driven by worker 0.
  bool sync = false;
  int64_t timeout_ms = 60000;
  // A model directory (training/estimators/model_dir.h): training resumes from its
  // latest checkpoint and ends with a checkpoint and the serving files. Empty: none.
  std::string checkpoint_dir;
  StepObserver on_step;  // may be empty; the loss is the mean over the step's towers
};

// The columns of tools/ctr_data.py's layout (user, item, site, category, hour, price):
// wide: identity columns of user (10^4), item (10^5) and category (100), site hashed
// into 2^18 buckets, hour, category x hour crossed into 2^20 buckets, and price;
// deep: embeddings of user, item and category (16, 16 and 8), hour as an indicator,
// and price.
StatusOr<WideDeepOptions> CtrDataColumns();

// OK when the options can train on rows with these feature names: InvalidArgument
// naming the first bad option or missing feature.
Status ValidateWideDeepOptions(const WideDeepOptions& options,
                               const std::vector<std::string>& feature_names);

struct WideDeepResult {
  double auc = 0;       // on the test rows
  double accuracy = 0;  // P >= 0.5 as the prediction
  double loss = 0;      // mean logistic loss on the test rows
  int64_t steps = 0;    // all workers together
  int64_t global_step = 0;  // steps, plus those of the checkpoint resumed from
  double seconds = 0;   // training
  double bytes_pulled_per_step = 0;  // measured between ps tasks and workers
  double bytes_pushed_per_step = 0;
  double dense_bytes_per_step = 0;   // every variable pulled and pushed whole
  double rows_touched_per_step = 0;  // distinct rows of the categorical tables
};

StatusOr<WideDeepResult> TrainWideDeep(const WideDeepOptions& options, const CsvData& train,
                                       const CsvData& test, const WorkerSessionFactory& sessions);

// The area under the ROC curve of `scores` for 0/1 `labels` (ties count half); NaN
// when one class is missing.
double AreaUnderCurve(const std::vector<double>& scores, const std::vector<int>& labels);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_WIDE_DEEP_H_
