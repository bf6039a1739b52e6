#include "kernels/kernels_test_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <type_traits>

#include "graph/op_registry.h"
#include "kernels/gpu_runtime.h"
#include "kernels/reference/reference.h"
#include "kernels/resource.h"

namespace actorflow {
namespace {

bool IsSummingOp(const std::string& op) {
  static const std::set<std::string> kOps = {
      "MatMul", "Sum", "Mean", "Softmax", "LogSoftmax", "BiasAdd",
      "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"};
  return kOps.count(op) > 0;
}

bool IsConstInput(const KernelTestCase& c, int i) {
  return std::find(c.const_inputs.begin(), c.const_inputs.end(), i) != c.const_inputs.end();
}

bool IsVariableInput(const KernelTestCase& c, int i) {
  return std::find(c.variable_inputs.begin(), c.variable_inputs.end(), i) !=
         c.variable_inputs.end();
}

// Host copies of the case's variables, in the order of c.variable_inputs.
StatusOr<std::vector<Tensor>> VariableValues(const KernelTestCase& c, const Graph& graph,
                                             ResourceManager* resources) {
  std::vector<Tensor> values;
  for (int i : c.variable_inputs) {
    const Node* node = graph.FindNode("input_" + std::to_string(i));
    if (node == nullptr) return Internal("variable input " + std::to_string(i) + " is missing");
    AF_ASSIGN_OR_RETURN(auto var, VariableForNode(resources, *node));
    std::lock_guard<std::mutex> lock(var->mu);
    AF_ASSIGN_OR_RETURN(Tensor host, ToHostTensor(var->value));
    values.push_back(host.DeepCopy());
  }
  return values;
}

// The attrs a node of `op` would hold: written attrs converted to their declared types,
// defaults filled in. Used where the node itself cannot be built.
StatusOr<AttrMap> NodeAttrs(const std::string& op, const AttrMap& written) {
  const OpDef* def = OpRegistry::Global().Find(op);
  if (def == nullptr) return NotFound("unknown op '" + op + "'");
  AttrMap attrs;
  for (const auto& [name, value] : written) {
    const AttrDef* attr = def->FindAttr(name);
    if (attr == nullptr) return InvalidArgument(op + ": unknown attr '" + name + "'");
    AF_ASSIGN_OR_RETURN(attrs[name], value.ConvertTo(attr->type));
  }
  for (const AttrDef& attr : def->attrs) {
    if (attrs.count(attr.name) == 0 && attr.default_value) attrs[attr.name] = *attr.default_value;
  }
  return attrs;
}

std::string IndexString(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.rank());
  for (int i = shape.rank() - 1; i >= 0; --i) {
    index[i] = flat % shape.dim(i);
    flat /= shape.dim(i);
  }
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? "," : "") + std::to_string(index[i]);
  return s + "]";
}

// The AsyncScheduler of a device kernel run by the harness: work posted from any
// thread (a GPU stream's callback) runs on the test thread waiting in RunUntilDone.
class HarnessScheduler : public AsyncScheduler {
 public:
  void RunAfter(int64_t delay_micros, std::function<void()> fn) override {
    Push(std::chrono::steady_clock::now() + std::chrono::microseconds(delay_micros),
         std::move(fn));
  }
  void Post(std::function<void()> fn) override {
    Push(std::chrono::steady_clock::now(), std::move(fn));
  }

  // Runs due work until `finished` (set by that work on this thread) or `limit`
  // passes; false on the limit.
  bool RunUntilDone(const bool& finished, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!finished) {
      std::unique_lock<std::mutex> lock(mu_);
      auto due = [&] {
        return !work_.empty() && work_.begin()->first <= std::chrono::steady_clock::now();
      };
      while (!due()) {
        auto wake = work_.empty() ? deadline : std::min(deadline, work_.begin()->first);
        if (cv_.wait_until(lock, wake) == std::cv_status::timeout &&
            std::chrono::steady_clock::now() >= deadline) {
          return false;
        }
      }
      std::function<void()> fn = std::move(work_.begin()->second);
      work_.erase(work_.begin());
      lock.unlock();
      fn();
    }
    return true;
  }

 private:
  void Push(std::chrono::steady_clock::time_point when, std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    work_.emplace(when, std::move(fn));
    cv_.notify_one();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> work_;
};

bool Close(double want, double got, Tolerance tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

}  // namespace

Tolerance DefaultTolerance(const std::string& op, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return Tolerance{1e-5, IsSummingOp(op) ? 1e-5 : 1e-6};
    case DType::kFloat64: return Tolerance{1e-12, 1e-12};
    default: return Tolerance{0.0, 0.0};
  }
}

std::string KernelTestCase::ToString() const {
  std::string s = op + "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += (i ? ", " : "") + inputs[i].DebugString();
    if (IsConstInput(*this, static_cast<int>(i))) s += " const";
    if (IsVariableInput(*this, static_cast<int>(i))) s += " variable";
  }
  s += ")";
  if (!attrs.empty()) {
    s += " {";
    bool first = true;
    for (const auto& [name, value] : attrs) {
      s += (first ? "" : ", ") + name + "=" + value.DebugString();
      first = false;
    }
    s += "}";
  }
  if (device_type != kDeviceCpu) s += " on " + device_type;
  return s;
}

StatusOr<KernelRun> RunKernel(const KernelTestCase& c, bool unknown_input_shapes,
                              bool sole_inputs) {
  KernelRun run;
  run.graph = std::make_unique<Graph>();
  NodeDef def;
  def.name = kNodeUnderTest;
  def.op = c.op;
  def.attrs = c.attrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    NodeDef input;
    input.name = "input_" + std::to_string(i);
    if (IsConstInput(c, static_cast<int>(i))) {
      input.op = "Const";
      input.attrs["value"] = c.inputs[i];
    } else if (IsVariableInput(c, static_cast<int>(i))) {
      input.op = "Variable";
      input.attrs["dtype"] = c.inputs[i].dtype();
      input.attrs["shape"] = c.inputs[i].shape();
    } else {
      input.op = "Placeholder";
      input.attrs["dtype"] = c.inputs[i].dtype();
      if (!unknown_input_shapes) input.attrs["shape"] = c.inputs[i].shape();
    }
    AF_RETURN_IF_ERROR(run.graph->AddNode(input).status());
    def.inputs.push_back(input.name);
  }
  AF_ASSIGN_OR_RETURN(run.node, run.graph->AddNode(def));
  AF_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                      KernelRegistry::Global().CreateKernel(*run.node, c.device_type));
  ResourceManager resources;
  for (int i : c.variable_inputs) {
    const Node* variable = run.graph->FindNode("input_" + std::to_string(i));
    if (variable == nullptr) {
      return Internal("variable input " + std::to_string(i) + " is missing");
    }
    AF_ASSIGN_OR_RETURN(auto var, VariableForNode(&resources, *variable));
    std::lock_guard<std::mutex> lock(var->mu);
    var->value = c.inputs[i].DeepCopy();
    var->initialized = true;
  }
  std::vector<Tensor> inputs = c.inputs;
  if (sole_inputs && c.device_type == kDeviceCpu) {
    for (Tensor& t : inputs) {
      if (t.IsInitialized()) t = t.DeepCopy();
    }
  }
  KernelContext ctx(run.node, std::move(inputs), &resources, /*step_id=*/1);
  if (c.device_type != kDeviceCpu) {
    // A device kernel resumes through the runtime's scheduler, on this thread.
    HarnessScheduler scheduler;
    const std::string device_name =
        "/job:localhost/replica:0/task:0/device:" + c.device_type + ":0";
    ctx.set_runtime(nullptr, &scheduler, device_name);
    bool finished = false;
    if (kernel->IsAsync()) {
      kernel->ComputeAsync(&ctx, [&finished] { finished = true; });
    } else {
      kernel->Compute(&ctx);
      finished = true;
    }
    if (!scheduler.RunUntilDone(finished, std::chrono::seconds(60))) {
      return DeadlineExceeded(run.node->Describe() + ": device kernel never called done");
    }
    run.status = ctx.status();
    for (const Tensor& out : ctx.outputs()) {
      AF_ASSIGN_OR_RETURN(Tensor host, ToHostTensor(out));
      run.outputs.push_back(std::move(host));
    }
    AF_ASSIGN_OR_RETURN(run.variables, VariableValues(c, *run.graph, &resources));
    return StatusOr<KernelRun>(std::move(run));
  }
  if (kernel->IsAsync()) {
    std::promise<void> done;
    std::future<void> finished = done.get_future();
    kernel->ComputeAsync(&ctx, [&done] { done.set_value(); });
    if (finished.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      return DeadlineExceeded(run.node->Describe() + ": async kernel never called done");
    }
  } else {
    kernel->Compute(&ctx);
  }
  run.status = ctx.status();
  run.outputs = ctx.outputs();
  for (int i = 0; i < ctx.num_inputs(); ++i) run.inputs.push_back(ctx.input(i));
  AF_ASSIGN_OR_RETURN(run.variables, VariableValues(c, *run.graph, &resources));
  return StatusOr<KernelRun>(std::move(run));
}

::testing::AssertionResult TensorsClose(const Tensor& want, const Tensor& got, Tolerance tol) {
  if (!got.IsInitialized()) return ::testing::AssertionFailure() << "output was never set";
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) {
    return ::testing::AssertionFailure() << "expected " << want.DebugString() << ", got "
                                         << got.DebugString();
  }
  int mismatches = 0;
  std::ostringstream details;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    bool ok;
    std::string w, g;
    if (IsFloating(want.dtype())) {
      ok = Close(want.ElementAsDouble(i), got.ElementAsDouble(i), tol);
      std::ostringstream ws, gs;
      ws.precision(17);
      gs.precision(17);
      ws << want.ElementAsDouble(i);
      gs << got.ElementAsDouble(i);
      w = ws.str();
      g = gs.str();
    } else {
      // Integers compared exactly as integers (int64 does not fit a double).
      auto as_int = [](const Tensor& t, int64_t k) -> int64_t {
        switch (t.dtype()) {
          case DType::kInt32: return t.data<int32_t>()[k];
          case DType::kInt64: return t.data<int64_t>()[k];
          default: return t.data<bool>()[k] ? 1 : 0;
        }
      };
      ok = as_int(want, i) == as_int(got, i);
      w = std::to_string(as_int(want, i));
      g = std::to_string(as_int(got, i));
    }
    if (ok) continue;
    if (++mismatches <= 5) {
      details << "\n  at " << IndexString(want.shape(), i) << ": expected " << w << ", got " << g;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << want.NumElements() << " elements of "
         << want.DebugString() << " differ (rtol " << tol.rtol << ", atol " << tol.atol
         << "):" << details.str();
}

::testing::AssertionResult MatchesReference(const KernelTestCase& c) {
  bool has_placeholder = false;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!IsConstInput(c, static_cast<int>(i))) has_placeholder = true;
  }
  // Passes: exact input shapes; unknown rank; exact shapes with inputs the kernel
  // may write its outputs over (CPU).
  for (int pass = 0; pass < 3; ++pass) {
    const bool unknown = pass == 1;
    const bool sole = pass == 2;
    if (unknown && !has_placeholder) continue;
    if (sole && c.device_type != kDeviceCpu) continue;
    const std::string what =
        c.ToString() + (unknown ? " [inputs of unknown rank]"
                                : sole ? " [inputs the kernel may write over]" : "");
    std::vector<Tensor> before;
    for (const Tensor& t : c.inputs) before.push_back(t.DeepCopy());

    StatusOr<KernelRun> run = RunKernel(c, unknown, sole);
    if (!run.ok()) {
      return ::testing::AssertionFailure() << what << ": " << run.status();
    }
    const Node& node = *run->node;
    if (!run->status.ok()) {
      return ::testing::AssertionFailure() << what << ": kernel failed: " << run->status;
    }
    std::vector<DType> node_dtypes;
    for (int i = 0; i < node.num_outputs(); ++i) node_dtypes.push_back(node.output_dtype(i));
    auto want = ReferenceCompute(c.op, node.attrs(), c.inputs, node_dtypes);
    if (!want.ok()) {
      return ::testing::AssertionFailure() << what << ": reference failed: " << want.status();
    }
    if (run->outputs.size() != want->size()) {
      return ::testing::AssertionFailure() << what << ": " << run->outputs.size()
                                           << " outputs, reference has " << want->size();
    }
    for (size_t i = 0; i < want->size(); ++i) {
      const Tensor& got = run->outputs[i];
      if (!got.IsInitialized()) {
        return ::testing::AssertionFailure() << what << ": output " << i << " was never set";
      }
      if (got.dtype() != node.output_dtype(static_cast<int>(i)) ||
          !node.output_shape(static_cast<int>(i)).IsCompatibleWith(got.shape())) {
        return ::testing::AssertionFailure()
               << what << ": output " << i << " is " << got.DebugString() << " but the node infers "
               << DTypeName(node.output_dtype(static_cast<int>(i)))
               << node.output_shape(static_cast<int>(i)).ToString();
      }
      Tolerance tol = c.tolerance ? *c.tolerance : DefaultTolerance(c.op, got.dtype());
      auto close = TensorsClose((*want)[i], got, tol);
      if (!close) {
        return ::testing::AssertionFailure() << what << ": output " << i << ": " << close.message();
      }
    }
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!TensorsEqual(before[i], c.inputs[i])) {
        return ::testing::AssertionFailure() << what << ": the kernel wrote into input " << i;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult FailsWith(const KernelTestCase& c, Code code,
                                     const std::string& substring) {
  const std::string what = c.ToString();
  auto attrs = NodeAttrs(c.op, c.attrs);
  if (attrs.ok()) {
    auto want = ReferenceCompute(c.op, *attrs, c.inputs, {});
    if (want.ok() || want.status().code() != code) {
      return ::testing::AssertionFailure()
             << what << ": the reference should fail with " << CodeName(code) << ", got "
             << (want.ok() ? Status::OK() : want.status());
    }
  }
  StatusOr<KernelRun> run = RunKernel(c);
  Status error = run.ok() ? run->status : run.status();
  if (error.ok()) {
    return ::testing::AssertionFailure() << what << ": expected " << CodeName(code)
                                         << " but the kernel succeeded";
  }
  if (error.code() != code) {
    return ::testing::AssertionFailure() << what << ": expected " << CodeName(code) << ", got "
                                         << error;
  }
  if (run.ok() && error.message().find(run->node->Describe()) == std::string::npos) {
    return ::testing::AssertionFailure() << what << ": the error does not name "
                                         << run->node->Describe() << ": " << error;
  }
  if (error.message().find(kNodeUnderTest) == std::string::npos) {
    return ::testing::AssertionFailure() << what << ": the error does not name the node: "
                                         << error;
  }
  if (!substring.empty() && error.message().find(substring) == std::string::npos) {
    return ::testing::AssertionFailure() << what << ": the error does not mention '"
                                         << substring << "': " << error;
  }
  return ::testing::AssertionSuccess();
}

std::vector<OpDType> Combine(const std::vector<std::string>& ops,
                             const std::vector<DType>& dtypes) {
  std::vector<OpDType> out;
  for (const std::string& op : ops) {
    for (DType dtype : dtypes) out.push_back(OpDType{op, dtype});
  }
  return out;
}

std::string OpDTypeName(const ::testing::TestParamInfo<OpDType>& info) {
  return info.param.op + "_" + DTypeName(info.param.dtype);
}

void PrintTo(const OpDType& p, std::ostream* os) { *os << p.op << "<" << DTypeName(p.dtype) << ">"; }

Tensor MakeTensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dtype, shape);
  VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        data[i] = values[i] != 0.0;
      } else {
        data[i] = static_cast<T>(values[i]);
      }
    }
  });
  return t;
}

double RandomTensors::Draw(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng_);
}

Tensor RandomTensors::Uniform(DType dtype, const Shape& shape, double lo, double hi) {
  std::vector<double> values(shape.num_elements());
  for (double& v : values) {
    if (dtype == DType::kBool) {
      v = std::uniform_int_distribution<int>(0, 1)(rng_);
    } else if (IsInteger(dtype)) {
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(std::ceil(lo)), static_cast<int64_t>(std::floor(hi)))(rng_));
    } else {
      v = Draw(lo, hi);
    }
  }
  return MakeTensor(dtype, shape, values);
}

Tensor RandomTensors::AwayFromZero(DType dtype, const Shape& shape, double min_abs,
                                   double max_abs) {
  Tensor magnitude = Uniform(dtype, shape, min_abs, max_abs);
  std::vector<double> values(shape.num_elements());
  for (int64_t i = 0; i < shape.num_elements(); ++i) {
    const bool negative = std::uniform_int_distribution<int>(0, 1)(rng_) == 1;
    values[i] = (negative ? -1.0 : 1.0) * magnitude.ElementAsDouble(i);
  }
  return MakeTensor(dtype, shape, values);
}

Tensor RandomTensors::Labels(DType dtype, int64_t n, int64_t classes) {
  return Uniform(dtype, Shape{n}, 0.0, static_cast<double>(classes - 1));
}

Tensor RandomTensors::Probabilities(DType dtype, int64_t n, int64_t c) {
  std::vector<double> values(n * c);
  for (int64_t r = 0; r < n; ++r) {
    double total = 0.0;
    for (int64_t j = 0; j < c; ++j) total += values[r * c + j] = Draw(0.0, 1.0);
    for (int64_t j = 0; j < c; ++j) values[r * c + j] /= total;
  }
  return MakeTensor(dtype, Shape{n, c}, values);
}

}  // namespace actorflow
