// The GPU device layer: probing (which must be clean without a driver), the caching
// pools, copies and completion callbacks. Cases that need a GPU are skipped, with
// the driver's answer, where there is none.
#include "kernels/cuda/gpu_device.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/gpu_kernel.h"
#include "kernels/gpu_runtime.h"

namespace actorflow {
namespace gpu {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (ProbeGpus().count == 0) GTEST_SKIP() << ProbeGpus().description

TEST(GpuDeviceTest, TheProbeAndTheRegisteredRuntimeAgree) {
  const GpuProbe& probe = ProbeGpus();
  EXPECT_EQ(GpuDeviceCount(), probe.count);
  EXPECT_EQ(DescribeGpus(), probe.description);
  if (probe.count == 0) {
    EXPECT_EQ(probe.description.rfind("no GPU: ", 0), 0u) << probe.description;
  }
}

TEST(GpuDeviceTest, WithoutAGpuNoDeviceOpensAndTheErrorSaysWhy) {
  if (ProbeGpus().count > 0) GTEST_SKIP() << "a GPU is present: " << ProbeGpus().description;
  GpuError error;
  EXPECT_EQ(GetGpuDevice(0, &error), nullptr);
  EXPECT_NE(error.message().find("no GPU"), std::string::npos) << error.message();
  auto device = DeviceFromName("/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_EQ(device.status().code(), Code::kUnavailable) << device.status();
}

TEST(GpuDeviceTest, ANameThatIsNotAGpuIsRejected) {
  EXPECT_EQ(DeviceFromName("/job:localhost/replica:0/task:0/device:CPU:0").status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(DeviceFromName("/device:GPU:x").status().code(), Code::kFailedPrecondition);
}

TEST(GpuDeviceTest, AFreedBlockIsReusedWithoutAnotherCudaMalloc) {
  SKIP_WITHOUT_GPU();
  GpuError error;
  GpuDevice* device = GetGpuDevice(0, &error);
  ASSERT_NE(device, nullptr) << error.message();
  void* first = nullptr;
  ASSERT_TRUE(AllocateDevice(device, 1000, &first).ok());
  const int64_t mallocs = GetPoolStats(device).device_mallocs;
  FreeDevice(device, first, 1000);
  void* second = nullptr;
  ASSERT_TRUE(AllocateDevice(device, 900, &second).ok());  // the same 512-byte class
  EXPECT_EQ(second, first);
  EXPECT_EQ(GetPoolStats(device).device_mallocs, mallocs);
  FreeDevice(device, second, 900);
}

TEST(GpuDeviceTest, ATensorRoundTripsThroughTheDevice) {
  SKIP_WITHOUT_GPU();
  GpuError error;
  GpuDevice* device = GetGpuDevice(0, &error);
  ASSERT_NE(device, nullptr) << error.message();
  ASSERT_TRUE(MakeCurrent(device).ok());
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  Tensor host = Tensor::FromVector(values, Shape{10, 100});
  auto on_device = CopyToDevice(device, host);
  ASSERT_TRUE(on_device.ok()) << on_device.status();
  EXPECT_TRUE(on_device->IsOnDevice());
  auto back = QueueCopyToHost(device, *on_device);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(Synchronize(device).ok());
  EXPECT_FALSE(back->IsOnDevice());
  EXPECT_TRUE(TensorsEqual(host, *back));
  auto through_runtime = ToHostTensor(*on_device);
  ASSERT_TRUE(through_runtime.ok()) << through_runtime.status();
  EXPECT_TRUE(TensorsEqual(host, *through_runtime));
}

TEST(GpuDeviceTest, TheCompletionCallbackFiresOnceAfterTheQueuedWork) {
  SKIP_WITHOUT_GPU();
  GpuError error;
  GpuDevice* device = GetGpuDevice(0, &error);
  ASSERT_NE(device, nullptr) << error.message();
  ASSERT_TRUE(MakeCurrent(device).ok());
  auto big = AllocateDeviceTensor(device, DType::kFloat32, Shape{1 << 22});
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE(Fill(device, ElemType::kFloat32, big->raw_data(), big->NumElements(), 2.0).ok());
  auto copy = QueueCopyToHost(device, *big);
  ASSERT_TRUE(copy.ok());
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  float seen = 0;
  ASSERT_TRUE(WhenQueuedWorkDone(device, [&](const GpuError& e) {
                EXPECT_TRUE(e.ok()) << e.message();
                std::lock_guard<std::mutex> lock(mu);
                seen = copy->data<float>()[(1 << 22) - 1];
                ++calls;
                cv.notify_all();
              }).ok());
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return calls > 0; }));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, 2.0f);
}

}  // namespace
}  // namespace gpu
}  // namespace actorflow
