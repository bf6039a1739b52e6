// What every classifier built on a DNNModelSpec does the same way, whether its graph
// is one model (DNNClassifier) or replicas of it (InGraphClassifier,
// training/distributed/in_graph_classifier.h): checking the options, calling the
// input function, choosing the optimizer, preparing the model directory, restoring
// the newest checkpoint, saving the last one, and checking a batch's labels.
//
// Thread safety: plain functions over their arguments.
#ifndef ACTORFLOW_TRAINING_ESTIMATORS_CLASSIFIER_SETUP_H_
#define ACTORFLOW_TRAINING_ESTIMATORS_CLASSIFIER_SETUP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"
#include "training/checkpoint/checkpoint.h"
#include "training/data/dataset.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/model_spec.h"
#include "training/optimizers/optimizer.h"

namespace actorflow {

// The spec's columns, layers, classes, activation and label column from `options`
// (the plain MLP; DNNClassifier adds the model family and its split).
DNNModelSpec ModelSpecFromOptions(const DNNClassifierOptions& options);

// InvalidArgument, prefixed by `who`, without a session factory or with a negative
// timeout.
Status CheckSessionOptions(const std::string& who, const DNNClassifierOptions& options);

// options.optimizer_factory's optimizer when set, else MakeOptimizer's.
StatusOr<std::unique_ptr<Optimizer>> MakeOptimizerFromOptions(const DNNClassifierOptions& options);

// The dataset input_fn makes, checked: (features, labels), or with labels_required
// false also (features) alone.
StatusOr<std::shared_ptr<const Dataset>> CallInputFn(const InputFn& input_fn, bool labels_required);

// Creates `dir` and writes spec as its model.json. FailedPrecondition naming the
// first difference when it holds another model; Unavailable when it cannot be created.
Status PrepareModelDir(const std::string& dir, const DNNModelSpec& spec);

// Restores dir's newest checkpoint into session and sets *checkpoint_step to its
// global step: true. False when dir has none (nothing changes); an error otherwise.
StatusOr<bool> RestoreLatestCheckpoint(const std::string& dir, Saver* saver, Session* session,
                                       int64_t* checkpoint_step);

// At the end of training: a checkpoint of global_step in dir (and model.json again)
// unless dir is empty or *checkpoint_step is already global_step; sets
// *checkpoint_step.
Status SaveAtEndOfTraining(const std::string& dir, const DNNModelSpec& spec, Saver* saver,
                           Session* session, int64_t global_step, int64_t* checkpoint_step);

// InvalidArgument unless labels is int32 [rows] with every label in [0, n_classes);
// `where` names the batch ("batch 3").
Status CheckLabels(const Tensor& labels, int64_t rows, int64_t n_classes, const std::string& where);

}  // namespace actorflow

#endif  // ACTORFLOW_TRAINING_ESTIMATORS_CLASSIFIER_SETUP_H_
