#include "training/data/iterator_ops.h"

#include <atomic>
#include <map>
#include <utility>

#include "kernels/kernel.h"

namespace actorflow {
namespace {

class DatasetRegistry {
 public:
  static DatasetRegistry& Global() {
    static DatasetRegistry* registry = new DatasetRegistry();  // used until exit
    return *registry;
  }

  std::string Register(std::shared_ptr<const Dataset> dataset) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string id = "one_shot_iterator_" + std::to_string(next_id_++);
    datasets_[id] = std::move(dataset);
    return id;
  }

  std::shared_ptr<const Dataset> Find(const std::string& id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = datasets_.find(id);
    return it == datasets_.end() ? nullptr : it->second;
  }

 private:
  mutable std::mutex mu_;
  int64_t next_id_ = 0;
  std::map<std::string, std::shared_ptr<const Dataset>> datasets_;
};

// IteratorGetNext: the next element of the iterator named by "iterator_id", one
// output per component. The end of the data is OutOfRange "End of sequence". It may
// wait for a Prefetch thread, which always makes progress on its own.
class IteratorGetNextKernel : public Kernel {
 public:
  explicit IteratorGetNextKernel(const Node& node)
      : Kernel(node), iterator_id_(node.attr<std::string>("iterator_id")) {}

  void Compute(KernelContext* ctx) override {
    const Node& n = node();
    if (ctx->resources() == nullptr) {
      ctx->Fail(Code::kInternal, "no ResourceManager to hold the iterator");
      return;
    }
    StatusOr<std::shared_ptr<const Dataset>> dataset = LookupDataset(iterator_id_);
    if (!dataset.ok()) {
      ctx->SetStatus(dataset.status().WithContext(n.Describe()));
      return;
    }
    auto resource = ctx->resources()->LookupOrCreate<IteratorResource>(
        "", iterator_id_, [&]() -> std::shared_ptr<Resource> {
          return std::make_shared<IteratorResource>(iterator_id_, (*dataset)->MakeIterator());
        });
    if (!resource.ok()) {
      ctx->SetStatus(resource.status().WithContext(n.Describe()));
      return;
    }
    Element element;
    Status s = (*resource)->GetNext(&element);
    if (!s.ok()) {
      ctx->SetStatus(s.WithContext(n.Describe()));
      return;
    }
    if (static_cast<int>(element.size()) != n.num_outputs()) {
      ctx->Fail(Code::kInvalidArgument,
                "the dataset produced " + std::to_string(element.size()) +
                    " components but the node has " + std::to_string(n.num_outputs()) +
                    " outputs");
      return;
    }
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Tensor& t = element[i];
      if (t.dtype() != n.output_dtype(i) || !t.shape().IsCompatibleWith(n.output_shape(i))) {
        ctx->Fail(Code::kInvalidArgument,
                  "component " + std::to_string(i) + " is " + t.DebugString() +
                      " but output " + std::to_string(i) + " is declared " +
                      DTypeName(n.output_dtype(i)) + " " + n.output_shape(i).ToString());
        return;
      }
      ctx->set_output(i, std::move(element[i]));
    }
  }

 private:
  std::string iterator_id_;
};

// The kernel dtype is output 0's, which may be any dtype.
[[maybe_unused]] const bool kIteratorGetNextKernelsRegistered = [] {
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                      DType::kBool}) {
    KernelRegistration registration("IteratorGetNext", kDeviceCpu, dtype,
                                    MakeKernelFactory<IteratorGetNextKernel>());
  }
  return true;
}();

}  // namespace

std::string RegisterDataset(std::shared_ptr<const Dataset> dataset) {
  return DatasetRegistry::Global().Register(std::move(dataset));
}

StatusOr<std::shared_ptr<const Dataset>> LookupDataset(const std::string& iterator_id) {
  std::shared_ptr<const Dataset> dataset = DatasetRegistry::Global().Find(iterator_id);
  if (!dataset) {
    return NotFound("no dataset is registered under iterator id '" + iterator_id +
                    "' in this process: build the iterator with MakeOneShotIterator in the "
                    "process that runs the graph");
  }
  return dataset;
}

Status IteratorResource::GetNext(Element* out) {
  std::lock_guard<std::mutex> lock(mu_);
  return iterator_->GetNext(out);
}

std::vector<Output> OneShotIterator::GetNext(const Scope& scope) const {
  const int n = dataset_ ? dataset_->num_components() : 0;
  std::vector<Output> outputs(n);
  if (!scope.ok() || iterator_id_.empty()) return outputs;
  std::vector<std::string> dtypes;
  std::vector<std::string> shapes;
  for (int i = 0; i < n; ++i) {
    dtypes.push_back(DTypeName(dataset_->output_dtypes()[i]));
    shapes.push_back(dataset_->output_shapes()[i].ToString());
  }
  const Node* node = scope.AddNode("IteratorGetNext", {},
                                   {{"iterator_id", iterator_id_},
                                    {"output_dtypes", std::move(dtypes)},
                                    {"output_shapes", std::move(shapes)}});
  if (node == nullptr) return outputs;
  for (int i = 0; i < n; ++i) outputs[i] = Output(node, i);
  return outputs;
}

OneShotIterator MakeOneShotIterator(const Scope& scope, std::shared_ptr<const Dataset> dataset) {
  if (!dataset) {
    scope.UpdateStatus(InvalidArgument("MakeOneShotIterator: the dataset is null"));
    return OneShotIterator(scope, nullptr, "");
  }
  if (!dataset->status().ok()) {
    scope.UpdateStatus(Status(dataset->status().code(),
                              "MakeOneShotIterator: the dataset is invalid: " +
                                  dataset->status().message()));
    return OneShotIterator(scope, std::move(dataset), "");
  }
  std::string id = RegisterDataset(dataset);
  return OneShotIterator(scope, std::move(dataset), std::move(id));
}

}  // namespace actorflow
