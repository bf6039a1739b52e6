// FUZZ_CHECK: the invariant checks of the fuzz targets in tools/fuzz/. A failed check
// prints what broke (and the values involved) and aborts, which libFuzzer reports as a
// crash and saves the input for. Only for the fuzz targets: library code reports bad
// input with a Status, never an abort.
#ifndef ACTORFLOW_TOOLS_FUZZ_FUZZ_CHECK_H_
#define ACTORFLOW_TOOLS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, detail)                                                         \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n%s\n", __FILE__, __LINE__, #cond, \
                   std::string(detail).c_str());                                         \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

#endif  // ACTORFLOW_TOOLS_FUZZ_FUZZ_CHECK_H_
