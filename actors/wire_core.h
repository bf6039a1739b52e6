// The wire format of the runtime's basic values (Status, Tensor, NodeExecStats,
// CrossDeviceTransfer):
// CAF `inspect` overloads that every protocol header includes, so that any message
// holding them can be sent (and, across processes, serialized). Included only by
// actors headers that are themselves included only by actors/*.cc (CAF).
//
// A Tensor is written as dtype, shape, byte count and then its bytes in one raw
// block (never element by element); the human-readable inspector used for logging
// sees only dtype and shape.
#ifndef ACTORFLOW_ACTORS_WIRE_CORE_H_
#define ACTORFLOW_ACTORS_WIRE_CORE_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

#include "graph/checked_size.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "kernels/session.h"

namespace actorflow {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Status& x) {
  int32_t code = static_cast<int32_t>(x.code());
  std::string message = x.message();
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x = Status(static_cast<Code>(code), message);
    return caf::none;
  });
  return f(caf::meta::type_name("actorflow.Status"), code, message, load);
}

// Whether a received tensor header (dtype, dims, byte count) describes a tensor that
// may be allocated: a known dtype, dims >= 0, a byte count that fits in int64 and
// equals `bytes`, and (when known, >= 0) no more bytes than the message has left. The
// decoder checks this before it allocates, so that a corrupt or hostile message is
// refused instead of allocating a wrapped-around size and reading past it.
inline Status CheckReceivedTensor(int32_t dtype, const std::vector<int64_t>& dims,
                                  uint64_t bytes, int64_t bytes_left) {
  if (dtype < static_cast<int32_t>(DType::kFloat32) || dtype > static_cast<int32_t>(DType::kBool)) {
    return InvalidArgument("received tensor has an unknown dtype code " + std::to_string(dtype));
  }
  auto expected = CheckedByteSize(static_cast<DType>(dtype), Shape(dims));
  if (!expected.ok()) return expected.status().WithContext("received tensor");
  if (static_cast<uint64_t>(*expected) != bytes) {
    return InvalidArgument("received tensor " + std::string(DTypeName(static_cast<DType>(dtype))) +
                           Shape(dims).ToString() + " needs " + std::to_string(*expected) +
                           " bytes but the message says " + std::to_string(bytes));
  }
  if (bytes_left >= 0 && bytes > static_cast<uint64_t>(bytes_left)) {
    return InvalidArgument("received tensor of " + std::to_string(bytes) +
                           " bytes but the message has only " + std::to_string(bytes_left) +
                           " left");
  }
  return Status::OK();
}

// OK unless `tensor` is a bool tensor holding a byte other than 0 or 1: such a byte
// is not a bool, and reading it as one is undefined, so a received tensor with one is
// refused (InvalidArgument naming the element and the byte).
inline Status CheckReceivedBools(const Tensor& tensor) {
  if (tensor.dtype() != DType::kBool) return Status::OK();
  const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    if (bytes[i] > 1) {
      return InvalidArgument("received bool tensor: element " + std::to_string(i) + " is byte " +
                             std::to_string(bytes[i]) + ", not 0 or 1");
    }
  }
  return Status::OK();
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Tensor& x) {
  int32_t dtype = x.IsInitialized() ? static_cast<int32_t>(x.dtype()) : -1;
  std::vector<int64_t> dims = x.IsInitialized() ? x.shape().dims() : std::vector<int64_t>{};
  if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
    auto save = caf::meta::save_callback([&]() -> caf::error {
      uint64_t bytes = x.IsInitialized() ? x.TotalBytes() : 0;
      if (auto err = f(bytes)) return err;
      return bytes > 0 ? f.apply_raw(bytes, x.raw_data()) : caf::error{};
    });
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims, save);
  } else if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    auto load = caf::meta::load_callback([&]() -> caf::error {
      uint64_t bytes = 0;
      if (auto err = f(bytes)) return err;
      if (dtype < 0) {
        x = Tensor();
        return caf::none;
      }
      // Inside a message (as every received tensor is) or a list, the inspector is
      // the deserializer base class: the binary deserializer behind it knows how many
      // bytes are left.
      int64_t bytes_left = -1;  // unknown for a deserializer that streams
      if (auto* binary = dynamic_cast<caf::binary_deserializer*>(&f)) {
        bytes_left = static_cast<int64_t>(binary->remaining());
      }
      if (!CheckReceivedTensor(dtype, dims, bytes, bytes_left).ok()) {
        return caf::make_error(caf::sec::invalid_argument);
      }
      // Every byte is read below: skip the zero fill.
      x = Tensor::Uninitialized(static_cast<DType>(dtype), Shape(dims));
      if (bytes > 0) {
        if (auto err = f.apply_raw(bytes, x.raw_data())) return err;
      }
      Status bools = CheckReceivedBools(x);
      if (!bools.ok()) {
        x = Tensor();
        return caf::make_error(caf::sec::invalid_argument, bools.message());
      }
      return caf::none;
    });
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims, load);
  } else {
    return f(caf::meta::type_name("actorflow.Tensor"), dtype, dims);
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, NodeExecStats& x) {
  return f(caf::meta::type_name("actorflow.NodeExecStats"), x.node_name, x.op, x.device,
           x.start_micros, x.end_micros, x.thread_id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CrossDeviceTransfer& x) {
  return f(caf::meta::type_name("actorflow.CrossDeviceTransfer"), x.src_device, x.dst_device,
           x.tensors, x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DeviceClockOffset& x) {
  return f(caf::meta::type_name("actorflow.DeviceClockOffset"), x.device, x.offset_micros,
           x.uncertainty_micros);
}

}  // namespace actorflow

#endif  // ACTORFLOW_ACTORS_WIRE_CORE_H_
