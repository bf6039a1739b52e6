// OpenBLAS picks its kernels for the CPU when the library loads. The OpenBLAS of
// Debian 12 (0.3.21) does not know CPUs released after it (Sapphire Rapids among them)
// and falls back to its generic "Prescott" SSE3 kernels: sgemm at about a third of
// what the CPU's AVX-512 or AVX2 kernels reach (convnet training on Fashion-MNIST: 319
// against 670 samples/s on 2 cores). OPENBLAS_CORETYPE overrides the choice, but only
// in the environment the library loads in, so a program that finds the generic core
// starts itself again with OPENBLAS_CORETYPE naming the newest core the CPU supports.
//
// Thread safety: call first thing in main, before any thread starts.
#ifndef ACTORFLOW_TOOLS_CLI_BLAS_CORE_H_
#define ACTORFLOW_TOOLS_CLI_BLAS_CORE_H_

#include <string>

namespace actorflow {
namespace cli {

// The OPENBLAS_CORETYPE this process should run with: "SkylakeX" (AVX-512) or
// "Haswell" (AVX2 and FMA) when OpenBLAS chose a generic core although the CPU has
// those, and OPENBLAS_CORETYPE is not set; empty otherwise.
std::string BetterBlasCore();

// With BetterBlasCore() not empty: sets OPENBLAS_CORETYPE and executes this program
// again (/proc/self/exe, the same arguments); does not return then. Returns, changing
// nothing, when there is nothing better or the exec fails (the program then runs on,
// slower).
void RestartWithBetterBlasCore(char** argv);

// Sets OpenBLAS to one thread unless OPENBLAS_NUM_THREADS is set: for commands whose
// parallelism is one computation per core (several devices, replicas or
// configurations in this process). OpenBLAS's own threads would split each product
// and then spin on sched_yield, against the other computations: `actorflow tune` of 2
// configurations (hidden 512,512, batch 256, 300 steps) on local:worker=2 took 3.2-3.5
// s with them, 1.4-1.5 s without.
void UseOneBlasThreadUnlessConfigured();

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_BLAS_CORE_H_
