// The run-time shape checks of the batch normalization kernels, shared by the CPU
// kernels (batch_norm_kernels.cc) and the GPU kernels (kernels/cuda/norm_kernels.cc;
// plain host C++), so that both refuse the same inputs with the same messages. They
// repeat what shape inference checks (graph/ops_nn_norm.cc) for the shapes that were
// unknown when the graph was built.
//
// x is [N,C] or [N,H,W,C], seen by the kernels as a row-major matrix [M, C] with
// M = N*H*W rows, one per pixel, and C channels.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_KERNELS_CPU_BATCH_NORM_SHAPES_H_
#define ACTORFLOW_KERNELS_CPU_BATCH_NORM_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "graph/shape.h"
#include "graph/status.h"

namespace actorflow {
namespace cpu {

struct BatchNormDims {
  int64_t rows = 0;      // M
  int64_t channels = 0;  // C
};

// One per-channel input: its name and shape; `may_be_empty` for the statistics that
// training mode does not read.
struct ChannelInput {
  const char* name;
  const Shape* shape;
  bool may_be_empty = false;
};

// M and C of `x`, after checking that x has rank 2 or 4 and that every per-channel
// input is [C] (or [0] when it may be empty). InvalidArgument without the node's name
// (the caller adds it).
inline StatusOr<BatchNormDims> CheckBatchNormShapes(const std::string& x_name, const Shape& x,
                                                    const std::vector<ChannelInput>& inputs) {
  if (x.rank() != 2 && x.rank() != 4) {
    return InvalidArgument(x_name + " has shape " + x.ToString() +
                           ", expected [N,C] or [N,H,W,C] (rank 2 or 4)");
  }
  BatchNormDims dims;
  dims.channels = x.dim(x.rank() - 1);
  // M = N*H*W, taken from the element count (which fits in int64) rather than
  // multiplied out: an empty tensor may have huge dims beside its 0. With no channel
  // there is nothing to compute, and M is 0 too.
  dims.rows = dims.channels > 0 ? x.num_elements() / dims.channels : 0;
  for (const ChannelInput& in : inputs) {
    const Shape& s = *in.shape;
    const bool ok = s.rank() == 1 &&
                    (s.dim(0) == dims.channels || (in.may_be_empty && s.dim(0) == 0));
    if (!ok) {
      return InvalidArgument(std::string(in.name) + " " + s.ToString() + " does not match the " +
                             std::to_string(dims.channels) + " channels of " + x_name + " " +
                             x.ToString() +
                             (in.may_be_empty ? " (in training mode it may also be empty)" : ""));
    }
  }
  return dims;
}

// The biased variance of a channel from the Bessel-corrected one that FusedBatchNorm
// returns in training mode (batch_variance = variance * M / (M - 1) for M > 1).
inline double BiasedVariance(double corrected, int64_t rows) {
  return rows > 1 ? corrected * static_cast<double>(rows - 1) / static_cast<double>(rows)
                  : corrected;
}

// The Bessel-corrected variance from the biased one (TF1's batch_variance output).
inline double CorrectedVariance(double biased, int64_t rows) {
  return rows > 1 ? biased * static_cast<double>(rows) / static_cast<double>(rows - 1) : biased;
}

}  // namespace cpu
}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_CPU_BATCH_NORM_SHAPES_H_
