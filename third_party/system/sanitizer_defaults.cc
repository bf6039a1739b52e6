// Defaults of the sanitizers of `--config=asan`, linked into every GoogleTest binary
// (through :gtest_main). In other builds this file defines nothing.
#if defined(__SANITIZE_ADDRESS__)

// LeakSanitizer reads these suppressions at exit. A suppression matches a leak when a
// frame of the allocation's stack is in the named module.
//
// CAF 0.17 can leave the objects it allocates itself (its BASP broker, that broker's
// connection tables, mailbox elements, node ids) in a reference cycle when a
// connection is cut while an actor system shuts down; the cycle is freed by nothing
// but the process's exit, and only some runs hit it. Objects that actorflow allocates
// (actor states, tensors, sessions) are allocated from actorflow's own frames and are
// still reported.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libcaf_io.so\n"
         "leak:libcaf_core.so\n";
}

#endif  // defined(__SANITIZE_ADDRESS__)
