// The wire format of the runtime's basic values (Status, Tensor, NodeExecStats,
// CrossDeviceTransfer):
// CAF `inspect` overloads that every protocol header includes, so that any message
// holding them can be sent (and, across processes, serialized). Included only by
// actors headers that are themselves included only by actors/*.cc (CAF).
//
// A Tensor is written as dtype, shape, byte count and then its bytes in one raw
// block (never element by element); the human-readable inspector used for logging
// sees only dtype and shape.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_WIRE_CORE_H_
#define ACTORFLOW_ACTORS_PROTOCOL_WIRE_CORE_H_

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

#include "actors/protocol/received_tensor.h"
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

#endif  // ACTORFLOW_ACTORS_PROTOCOL_WIRE_CORE_H_
