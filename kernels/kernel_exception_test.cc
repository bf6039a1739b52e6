// A kernel that throws (std::bad_alloc from an allocation the device cannot meet,
// or any other exception) fails its own step with a Status naming the node and op,
// and the executor runs the next step as usual: an exception never escapes to the
// runtime that hosts the executor (a device actor would die of it).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <new>
#include <stdexcept>

#include "graph/graph.h"
#include "kernels/executor.h"
#include "kernels/kernel.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;

class ConstKernel : public Kernel {
 public:
  using Kernel::Kernel;
  void Compute(KernelContext* ctx) override {
    ctx->set_output(0, ctx->node().attr<Tensor>("value"));
  }
};

// Throws `error` on its first `throws` computations, then passes its input on.
class ThrowingKernel : public Kernel {
 public:
  ThrowingKernel(const Node& node, std::exception_ptr error, int throws)
      : Kernel(node), error_(std::move(error)), throws_left_(throws) {}
  void Compute(KernelContext* ctx) override {
    if (throws_left_-- > 0) std::rethrow_exception(error_);
    ctx->set_output(0, ctx->input(0));
  }

 private:
  std::exception_ptr error_;
  int throws_left_;
};

// An asynchronous kernel that throws, either before or after calling `done`.
class AsyncThrowingKernel : public Kernel {
 public:
  AsyncThrowingKernel(const Node& node, bool done_first) : Kernel(node), done_first_(done_first) {}
  bool IsAsync() const override { return true; }
  void Compute(KernelContext*) override {}
  void ComputeAsync(KernelContext* ctx, std::function<void()> done) override {
    if (done_first_) {
      ctx->set_output(0, ctx->input(0));
      done();
    }
    throw std::runtime_error("async kernel failed");
  }

 private:
  bool done_first_;
};

struct Fixture {
  Graph graph;
  const Node* c = nullptr;
  const Node* node = nullptr;
  std::vector<std::unique_ptr<Kernel>> owned;
  std::map<const Node*, Kernel*> kernels;

  Fixture() {
    c = *graph.AddNode(NodeDef{"c", "Const", {}, {{"value", Tensor::Scalar(1.5f)}}, ""});
    node = *graph.AddNode(NodeDef{"starved", "Identity", {"c"}, {}, ""});
    Use(std::make_unique<ConstKernel>(*c));
  }
  void Use(std::unique_ptr<Kernel> k) {
    kernels[&k->node()] = k.get();
    owned.push_back(std::move(k));
  }
  std::unique_ptr<Executor> Build() {
    ExecutorSpec spec{&graph, {c, node}, {}, {Endpoint{node, 0}}};
    auto ex = Executor::Create(spec, [this](const Node& n) -> StatusOr<Kernel*> {
      return kernels.at(&n);
    });
    EXPECT_TRUE(ex.ok()) << ex.status();
    return ex.ok() ? std::move(ex).value() : nullptr;
  }
};

TEST(KernelExceptionTest, BadAllocFailsTheStepAsResourceExhaustedAndTheNextStepRuns) {
  Fixture f;
  f.Use(std::make_unique<ThrowingKernel>(*f.node, std::make_exception_ptr(std::bad_alloc()), 1));
  auto ex = f.Build();
  ASSERT_NE(ex, nullptr);
  StepResult failed = ex->Run(StepArgs{});
  EXPECT_EQ(failed.status.code(), Code::kResourceExhausted) << failed.status;
  EXPECT_THAT(failed.status.message(), HasSubstr("node 'starved' (Identity)"));
  EXPECT_THAT(failed.status.message(), HasSubstr("out of memory"));
  StepResult next = ex->Run(StepArgs{});
  ASSERT_TRUE(next.status.ok()) << next.status;
  EXPECT_EQ(next.fetches[0].data<float>()[0], 1.5f);
}

TEST(KernelExceptionTest, AnyOtherExceptionIsInternalNamingTheOpAndTheException) {
  Fixture f;
  f.Use(std::make_unique<ThrowingKernel>(
      *f.node, std::make_exception_ptr(std::runtime_error("index out of bounds")), 1));
  auto ex = f.Build();
  ASSERT_NE(ex, nullptr);
  StepResult failed = ex->Run(StepArgs{});
  EXPECT_EQ(failed.status.code(), Code::kInternal) << failed.status;
  EXPECT_THAT(failed.status.message(), HasSubstr("the Identity kernel threw"));
  EXPECT_THAT(failed.status.message(), HasSubstr("index out of bounds"));
  EXPECT_TRUE(ex->Run(StepArgs{}).status.ok());
}

TEST(KernelExceptionTest, AnAsynchronousKernelThatThrowsBeforeDoneFailsItsStepOnce) {
  Fixture f;
  f.Use(std::make_unique<AsyncThrowingKernel>(*f.node, /*done_first=*/false));
  auto ex = f.Build();
  ASSERT_NE(ex, nullptr);
  StepResult failed = ex->Run(StepArgs{});
  EXPECT_EQ(failed.status.code(), Code::kInternal) << failed.status;
  EXPECT_THAT(failed.status.message(), HasSubstr("async kernel failed"));
}

TEST(KernelExceptionTest, AnExceptionAfterDoneDoesNotCompleteTheNodeTwice) {
  Fixture f;
  f.Use(std::make_unique<AsyncThrowingKernel>(*f.node, /*done_first=*/true));
  auto ex = f.Build();
  ASSERT_NE(ex, nullptr);
  // The node's own completion came first and counts; the step ends exactly once.
  StepResult r = ex->Run(StepArgs{});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.fetches[0].data<float>()[0], 1.5f);
}

TEST(KernelExceptionTest, AKernelFactoryThatThrowsIsAStatusNotACrash) {
  Graph graph;
  const Node* node = *graph.AddNode(NodeDef{"n", "Const", {}, {{"value", Tensor::Scalar(1.0f)}}, ""});
  KernelRegistry::Global().Register("Const", "TestThrowingDevice", DType::kFloat32,
                                    [](const Node&) -> StatusOr<std::unique_ptr<Kernel>> {
                                      throw std::bad_alloc();
                                    });
  auto kernel = KernelRegistry::Global().CreateKernel(*node, "TestThrowingDevice");
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), Code::kResourceExhausted) << kernel.status();
  EXPECT_THAT(kernel.status().message(), HasSubstr("node 'n' (Const)"));
}

}  // namespace
}  // namespace actorflow
