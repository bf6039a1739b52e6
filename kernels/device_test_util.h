// What the device kernel suites (kernels/device_kernels_test.cc,
// kernels/device_errors_test.cc) share: the device types every case runs on, why one
// cannot run here, and a test case from an op, its inputs and attributes.
#ifndef ACTORFLOW_KERNELS_DEVICE_TEST_UTIL_H_
#define ACTORFLOW_KERNELS_DEVICE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "graph/attr_value.h"
#include "graph/tensor.h"
#include "kernels/gpu_runtime.h"
#include "kernels/kernel.h"
#include "kernels/kernels_test_util.h"

namespace actorflow {

inline const std::vector<std::string>& DeviceTypes() {
  static const std::vector<std::string> types = {kDeviceCpu, kDeviceGpu};
  return types;
}

// Empty when the device type can run here, else why not.
inline std::string DeviceUnavailable(const std::string& device_type) {
  if (device_type == kDeviceCpu) return "";
  if (GpuDeviceCount() > 0) return "";
  return DescribeGpus();
}

inline KernelTestCase Case(const std::string& op, std::vector<Tensor> inputs,
                           AttrMap attrs = {}) {
  KernelTestCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  return c;
}

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_DEVICE_TEST_UTIL_H_
