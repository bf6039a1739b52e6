// Builders of the fused LSTM and GRU cells (LSTMBlockCell, GRUBlockCell) and their gradients.
#ifndef ACTORFLOW_GRAPH_RNN_OPS_H_
#define ACTORFLOW_GRAPH_RNN_OPS_H_

#include "graph/scope.h"

namespace actorflow {}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_RNN_OPS_H_
