// The learning rate every trainer uses when its caller gives none: the
// DNNClassifier, the parameter shards (ParameterServerOptions, ShardConfig), the
// all-reduce trainer, the library trainer (training/distributed/trainer.h) and
// `actorflow train --lr`. One value, so that the same model trains the same way
// whichever path runs it.
//
// Models whose rate differs on purpose (word2vec's SGD at 1, wide & deep's FTRL, the
// character models', Adam's own kDefaultAdamLearningRate) set theirs explicitly.
//
// Header-only, no dependency: low enough in the graph for every layer to include.
#ifndef ACTORFLOW_KERNELS_DEFAULT_LEARNING_RATE_H_
#define ACTORFLOW_KERNELS_DEFAULT_LEARNING_RATE_H_

namespace actorflow {

inline constexpr double kDefaultLearningRate = 0.01;

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_DEFAULT_LEARNING_RATE_H_
