// actorflow's public C++ API in one header: what a program that builds, trains and
// runs graphs needs, on one machine or on a cluster, and no CAF header (the actor
// runtime stays behind the Session interface). A user's BUILD depends on the one
// target `//:actorflow`:
//
//   cc_binary(name = "train", srcs = ["train.cc"], deps = ["//:actorflow"])
//
//   #include "actorflow.h"
//   using namespace actorflow;
//   Scope root = Scope::NewRootScope();
//   auto x = Placeholder(root, DType::kFloat32);
//   auto y = Mul(root, x, 2.0f);
//   auto session = ClientSession::Create(root);      // the actor runtime in process
//   std::vector<Tensor> out;
//   Status s = (*session)->Run({{x, 3.0f}}, {y}, &out);   // out[0] == 6
//
// What is here, by layer:
//   errors and values   Status/StatusOr, DType, Shape, Tensor
//   graph building      Graph, Scope, the op functions (sparse ones: Gather, Scatter*,
//                       SparseApply*; sequence ones: Pack, Split, BatchMatMul,
//                       LayerNorm, the fused LSTM/GRU cells, ...), Gradients (dense or
//                       IndexedSlices), ConditionalAccumulator, the collectives
//                       (CollectiveAllReduce, -Broadcast, -AllGather, -ReduceScatter)
//   running             Session, SessionOptions, RunOptions, RunMetadata, NewSession,
//                       ClientSession, MonitoredTrainingSession (NewMonitoredTraining-
//                       Session, Scaffold, SessionRunHook and the standard hooks)
//   clusters            ClusterSpec, Server, LocalCluster (targets actorflow://host:port),
//                       ReplicaDeviceSetter (variables on ps tasks, the rest on a worker)
//   training            variables, layers (Dense; the layer classes Conv2D, Dense,
//                       BatchNormalization, Dropout; the sequence layers Embedding,
//                       LSTM, GRU, MultiHeadAttention, TransformerBlock), optimizers
//                       (SyncReplicasOptimizer for synchronous replicas,
//                       AllReduceOptimizer and BroadcastGlobalVariables for
//                       all-reduce data parallelism without ps),
//                       datasets (CSV, IDX and TFRecord files, image augmentation,
//                       character text), DNNClassifier,
//                       checkpoints (Saver), SummaryWriter (TensorBoard event files)
//   data parallelism    Train (TrainerOptions: a model x a cluster x a policy; sync,
//                       async, SSP or elastic workers on ps tasks, with recovery)
#ifndef ACTORFLOW_ACTORFLOW_H_
#define ACTORFLOW_ACTORFLOW_H_

// Errors, values, graphs and the builder API.
#include "graph/accumulator_ops.h"
#include "graph/collective_ops.h"
#include "graph/gradients.h"
#include "graph/graph.h"
#include "graph/math_ops.h"
#include "graph/ops.h"
#include "graph/rnn_ops.h"
#include "graph/scope.h"
#include "graph/shape.h"
#include "graph/shape_ops.h"
#include "graph/sampled_ops.h"
#include "graph/sparse_ops.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

// Sessions: the interface, the factory for every target, and ClientSession.
#include "actors/cluster/client_session.h"
#include "actors/cluster/session_factory.h"
#include "kernels/session.h"

// Training loops: MonitoredTrainingSession (init or restore, non-chiefs waiting for
// the chief, checkpoints, summaries, step deadlines), its Scaffold and hooks.
#include "actors/monitored/monitored_session_factory.h"
#include "training/data/coordinator.h"
#include "training/monitored/hooks.h"
#include "training/monitored/monitored_session.h"
#include "training/monitored/scaffold.h"
#include "training/monitored/session_run_hook.h"

// Clusters: specs, one task (tf.train.Server), a whole cluster in this process.
#include "actors/cluster/local_cluster.h"
#include "actors/cluster/remote_session.h"
#include "actors/cluster/server.h"
#include "placement/cluster_spec.h"
#include "placement/replica_device_setter.h"

// Training: variables, optimizers, input pipelines, the Estimator-style classifier,
// checkpoints.
#include "training/checkpoint/checkpoint.h"
#include "training/data/char_text.h"
#include "training/data/csv_dataset.h"
#include "training/data/dataset.h"
#include "training/data/idx_file_dataset.h"
#include "training/data/image_augmentation.h"
#include "training/data/tfrecord_dataset.h"
#include "training/estimators/dnn_classifier.h"
#include "training/estimators/layer_classes.h"
#include "training/estimators/layers.h"
#include "training/estimators/model_dir.h"
#include "training/estimators/sequence_layers.h"
#include "training/optimizers/optimizer.h"
#include "training/summary/summary_writer.h"
// The library trainer: a model x a cluster (local, or one worker of a cluster spec) x a
// policy (sync, async, SSP, elastic, all-reduce, in-graph), what `actorflow train
// --cluster` runs; and TrainGraphWorkload for models that build their own graphs.
#include "actors/trainer/cluster_trainer.h"
#include "actors/trainer/graph_trainer.h"
#include "training/distributed/graph_workload.h"
#include "training/distributed/trainer.h"
#include "training/distributed/trainer_options.h"
// Synchronous between-graph training of any graph (tf.train.SyncReplicasOptimizer).
#include "training/distributed/allreduce_optimizer.h"
#include "training/distributed/sync_replicas_optimizer.h"
#include "training/optimizers/variables.h"

// Serving: exported versions (TensorFlow Serving's layout) and the model server that
// `actorflow serve` puts behind its REST API, callable here without HTTP.
#include "actors/serving/model_server.h"
#include "training/distributed/ensemble.h"
#include "training/serving/servable.h"

#endif  // ACTORFLOW_ACTORFLOW_H_
