// Resources that outlive a step: variables, held by a ResourceManager per device
// (per session for DirectSession; per device in the actor runtime, where a server
// keeps them for the task's life, so variables outlive sessions and clients).
//
// Thread safety: ResourceManager is internally synchronized. A Variable's fields are
// guarded by its `mu`. Readers take `value` (a shared buffer) under `mu` and then use
// it without the lock; writers therefore never mutate a buffer that a reader may hold:
// in-place updates go through MutableValue(), which copies first when shared
// (copy-on-write).
#ifndef ACTORFLOW_KERNELS_RESOURCE_H_
#define ACTORFLOW_KERNELS_RESOURCE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace actorflow {

class VariableResource {
 public:
  VariableResource(std::string name, DType dtype, Shape shape)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)) {}

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  const Shape& declared_shape() const { return shape_; }

  std::mutex mu;
  // Guarded by mu. Uninitialized until the first Assign.
  Tensor value;
  bool initialized = false;

  // Precondition: mu held and initialized. Returns `value` after making sure no one
  // else shares its buffer, so that it can be written in place.
  Tensor& MutableValue();

 private:
  std::string name_;
  DType dtype_;
  Shape shape_;
};

// Base of non-variable resources (dataset iterators, queues, ...), shared by name
// like variables. Implementations synchronize themselves.
class Resource {
 public:
  virtual ~Resource() = default;
  virtual std::string DebugString() const = 0;
};

class ResourceManager {
 public:
  // The resource `name` in `container`, created with `create()` on first use.
  // InvalidArgument when a resource of another type holds that name.
  template <typename T, typename Create>
  StatusOr<std::shared_ptr<T>> LookupOrCreate(const std::string& container,
                                              const std::string& name, Create create) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = resources_[container][name];
    if (!slot) slot = create();
    auto typed = std::dynamic_pointer_cast<T>(slot);
    if (!typed) {
      return InvalidArgument("resource '" + name + "' in container '" + container +
                             "' has another type: " + slot->DebugString());
    }
    return typed;
  }

  // The variable `name` in `container` (empty = default), created on first use with
  // the given dtype and shape. InvalidArgument if it exists with another dtype.
  StatusOr<std::shared_ptr<VariableResource>> LookupOrCreateVariable(const std::string& container,
                                                             const std::string& name,
                                                             DType dtype, const Shape& shape);
  // NotFound if absent.
  StatusOr<std::shared_ptr<VariableResource>> LookupVariable(const std::string& container,
                                                     const std::string& name) const;
  // Drops every variable and resource of the given containers (all if empty).
  void Clear(const std::vector<std::string>& containers = {});
  // Changes whenever a variable may have been dropped (Clear), and is never the same
  // for two managers: a caller may keep a looked-up variable for as long as the epoch
  // stays what it was at the lookup.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  std::vector<std::string> VariableNames(const std::string& container = "") const;

 private:
  static uint64_t NextEpoch();

  mutable std::mutex mu_;
  std::atomic<uint64_t> epoch_{NextEpoch()};
  std::map<std::string, std::map<std::string, std::shared_ptr<VariableResource>>> containers_;
  std::map<std::string, std::map<std::string, std::shared_ptr<Resource>>> resources_;
};

// The container of the resources private to one session (a reader whose graph names
// no shared_name; TensorFlow 1's resources without a shared_name are the same): a
// server's devices outlive sessions and serve many at once, so such a resource is
// keyed by the session, and dropped when the session's last partition goes.
// `session_scope` 0 (a DirectSession, whose manager is its own) gives "".
std::string SessionContainer(uint64_t session_scope);

// The variable that a Variable node stands for: its "container" attr, and its
// "shared_name" attr or else the node's name. Created (uninitialized) on first use.
StatusOr<std::shared_ptr<VariableResource>> VariableForNode(ResourceManager* resources,
                                                    const Node& variable_node);

// VariableForNode's answers kept by slot (a node index, a ref input) while their
// manager's epoch stays what it was at the lookup: the lookup by name costs more than
// a small graph's kernels, and an executor or kernel asks for the same variables
// every step. Thread-safe.
class VariableLookupCache {
 public:
  StatusOr<std::shared_ptr<VariableResource>> Get(ResourceManager* resources,
                                                  const Node& variable_node, size_t slot);

 private:
  struct Entry {
    uint64_t epoch = 0;  // of the manager it came from; 0: none
    std::shared_ptr<VariableResource> variable;
  };
  std::mutex mu_;
  std::vector<Entry> entries_;  // by slot, grown on use
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_RESOURCE_H_
