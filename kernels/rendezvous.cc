#include "kernels/rendezvous.h"

namespace actorflow {

std::string RendezvousKey::ToString() const {
  return std::to_string(step_id) + ";" + send_device + ";" + recv_device + ";" + tensor_name;
}

}  // namespace actorflow
