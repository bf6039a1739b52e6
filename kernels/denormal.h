// Kernels compute with denormal floats flushed to zero, as TensorFlow's compute
// threads do (tensorflow/core/platform/denormal.h).
//
// Why: a float below 2^-126 takes a slow path through the FPU on x86, tens to a
// hundred cycles an operation instead of one. A network that has fit its data makes
// them by the millions: softmax probabilities of classes it rules out, their
// gradients, and what those multiply into. An Iris network trained for 20 000 steps
// took 1.5x as long with one seed as with others on this account, and in
// `actorflow tune` the slow network held back the one training beside it. Flushing
// them loses nothing a float32 network can use: they lie far below the precision of
// every weight, activation and gradient of a model that trains.
//
// ScopedFlushDenormal sets flush-to-zero (results) and denormals-are-zero (inputs)
// on the calling thread for its lifetime and restores the thread's previous mode at
// its end, so that code around a step (a caller's own arithmetic, tests' reference
// computations) keeps its IEEE behaviour. Built for other than x86's SSE it does
// nothing. The executor holds one while it runs a step's kernels
// (kernels/executor.cc), a parameter shard while it averages gradients and applies
// an update (kernels/ps/parameter_shard_state.cc, shard_optimizer.cc): the same
// arithmetic wherever an update runs.
#ifndef ACTORFLOW_KERNELS_DENORMAL_H_
#define ACTORFLOW_KERNELS_DENORMAL_H_

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

namespace actorflow {

class ScopedFlushDenormal {
 public:
  ScopedFlushDenormal() {
#if defined(__SSE2__)
    const unsigned csr = _mm_getcsr();
    // Inside another scope on this thread the mode is set already: a read, no write.
    if ((csr & kModeBits) != kModeBits) {
      saved_mode_ = csr & kModeBits;
      changed_ = true;
      _mm_setcsr(csr | kModeBits);
    }
#endif
  }
  // Puts back only the two mode bits: the exception flags the kernels raised stay.
  ~ScopedFlushDenormal() {
#if defined(__SSE2__)
    if (changed_) _mm_setcsr((_mm_getcsr() & ~kModeBits) | saved_mode_);
#endif
  }
  ScopedFlushDenormal(const ScopedFlushDenormal&) = delete;
  ScopedFlushDenormal& operator=(const ScopedFlushDenormal&) = delete;

 private:
#if defined(__SSE2__)
  // MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
  static constexpr unsigned kModeBits = 0x8000 | 0x0040;
  unsigned saved_mode_ = 0;
  bool changed_ = false;
#endif
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_DENORMAL_H_
