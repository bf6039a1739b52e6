// Test hooks of the test-only ops (kernels/test_ops.cc).
#ifndef ACTORFLOW_KERNELS_TEST_OPS_H_
#define ACTORFLOW_KERNELS_TEST_OPS_H_

#include <cstdint>
#include <string>

namespace actorflow {

// Waits until TestNotify nodes with this `name` have run `count` times in total in
// this process; false when `timeout_ms` passes first.
bool WaitForNotifications(const std::string& name, int64_t count, int64_t timeout_ms);

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_TEST_OPS_H_
