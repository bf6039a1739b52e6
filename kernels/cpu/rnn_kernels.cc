// CPU kernels of the fused LSTM and GRU cells (LSTMBlockCell, GRUBlockCell) and their gradients.
namespace actorflow {
namespace cpu {}  // namespace cpu
}  // namespace actorflow
