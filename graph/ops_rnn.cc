// Registers the sequence models' the fused LSTM and GRU cells (LSTMBlockCell, GRUBlockCell) and their gradients (graph/rnn_ops.h).
#include "graph/op_set_internal.h"

namespace actorflow {
namespace {}  // namespace
}  // namespace actorflow
