#include "kernels/kernel.h"

#include <new>
#include <stdexcept>

namespace actorflow {

Status KernelExceptionStatus(const Node& node, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc& e) {
    return ResourceExhausted(node.Describe() + ": out of memory: the " + node.op() +
                             " kernel could not allocate (" + e.what() +
                             "); the step failed, the device goes on serving");
  } catch (const std::exception& e) {
    return Internal(node.Describe() + ": the " + node.op() + " kernel threw an exception (" +
                    e.what() + "); the step failed, the device goes on serving");
  } catch (...) {
    return Internal(node.Describe() + ": the " + node.op() +
                    " kernel threw an unknown exception; the step failed, the device goes on "
                    "serving");
  }
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry();  // never destroyed: used at exit
  return *registry;
}

void KernelRegistry::Register(const std::string& op, const std::string& device_type,
                              DType dtype, KernelFactory factory) {
  factories_[{op, device_type, dtype}] = std::move(factory);
}

bool KernelRegistry::HasKernel(const std::string& op, const std::string& device_type,
                               DType dtype) const {
  return factories_.count({op, device_type, dtype}) > 0;
}

std::vector<DType> KernelRegistry::RegisteredDTypes(const std::string& op,
                                                    const std::string& device_type) const {
  std::vector<DType> out;
  for (const auto& [key, factory] : factories_) {
    if (std::get<0>(key) == op && std::get<1>(key) == device_type) out.push_back(std::get<2>(key));
  }
  return out;
}

StatusOr<std::unique_ptr<Kernel>> KernelRegistry::CreateKernel(
    const Node& node, const std::string& device_type) const {
  auto it = factories_.find({node.op(), device_type, node.kernel_dtype()});
  if (it == factories_.end()) {
    std::string have;
    for (DType d : RegisteredDTypes(node.op(), device_type)) {
      have += (have.empty() ? "" : ", ") + std::string(DTypeName(d));
    }
    return NotFound(node.Describe() + ": no " + device_type + " kernel for op " + node.op() +
                    " with dtype " + DTypeName(node.kernel_dtype()) +
                    (have.empty() ? std::string(" (the op has no " + device_type + " kernels)")
                                  : " (registered dtypes: " + have + ")"));
  }
  try {
    return it->second(node);
  } catch (...) {
    return KernelExceptionStatus(node, std::current_exception());
  }
}

}  // namespace actorflow
