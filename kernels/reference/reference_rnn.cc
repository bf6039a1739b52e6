// Reference kernels of the fused LSTM and GRU cells (LSTMBlockCell, GRUBlockCell) and their gradients.
#include "kernels/reference/reference_util.h"

namespace actorflow {
namespace reference {

void AddRnnOps(RefTable* table) { (void)table; }

}  // namespace reference
}  // namespace actorflow
