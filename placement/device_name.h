// Device names in TensorFlow's form, full ("/job:worker/replica:0/task:1/device:GPU:0")
// or partial ("/job:ps/task:0", "/device:GPU:*", "/gpu:1", "CPU:0", "" = anywhere).
// A node's requested device is a partial spec; the placer turns it into one full name.
//
// Accepted components, each at most once and in any order, separated by '/' (the
// leading '/' is optional):
//   job:NAME        NAME = a letter, then letters, digits, '_' or '-'
//   replica:N       N = a non-negative integer or '*'
//   task:N
//   device:TYPE:ID  TYPE = letters, digits, '_' (stored uppercase) or '*'; ID = N or '*'
//   device:TYPE     any ID
//   TYPE:ID         legacy short form: "/cpu:0", "/GPU:1", "/testdev:*"
// Keywords and types are case-insensitive: "/GPU:0", "/gpu:0" and "/device:gpu:0" all
// name device type GPU, id 0. Job names keep their case.
//
// Thread safety: plain values and pure functions.
#ifndef ACTORFLOW_PLACEMENT_DEVICE_NAME_H_
#define ACTORFLOW_PLACEMENT_DEVICE_NAME_H_

#include <optional>
#include <string>

#include "graph/status.h"

namespace actorflow {

// The task a single-process session runs in; the default for unspecified fields.
inline constexpr char kLocalTaskName[] = "/job:localhost/replica:0/task:0";
inline constexpr char kLocalCpuDeviceName[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// A device spec: each field absent means "any".
struct DeviceSpec {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;  // uppercase: "CPU", "GPU", ...
  std::optional<int> id;            // absent also when written as '*'

  // The canonical form: the present fields in the order job, replica, task, device;
  // "/device:GPU:*" for a type without id, "/device:*:1" for an id without type,
  // "" when nothing is set. ParseDeviceSpec(ToString()) gives back the same spec.
  std::string ToString() const;

  // All five fields present: the name of one concrete device.
  bool IsFullySpecified() const;
  bool IsEmpty() const { return !job && !replica && !task && !type && !id; }
  // The task part only (type and id cleared): "/job:ps/replica:0/task:1".
  DeviceSpec TaskPart() const;

  bool operator==(const DeviceSpec& o) const {
    return job == o.job && replica == o.replica && task == o.task && type == o.type && id == o.id;
  }
  bool operator!=(const DeviceSpec& o) const { return !(*this == o); }
};

// Parses a full or partial device name. InvalidArgument naming the spec and what is
// wrong with it (an unknown component, a field given twice, a bad number).
StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& spec);

// True when every field present in `spec` equals that field of `device` (a field
// absent from `device` matches only an absent field in `spec`).
bool Matches(const DeviceSpec& spec, const DeviceSpec& device);

// True when no field is present in both with different values: some device could
// match both.
bool IsCompatible(const DeviceSpec& a, const DeviceSpec& b);

// `spec` with its absent fields taken from `defaults`. The id is taken from `defaults`
// only when the types agree (or `spec` has none): "/gpu:*" merged with ".../CPU:0"
// stays any GPU rather than becoming GPU:0.
DeviceSpec MergeDefaults(const DeviceSpec& spec, const DeviceSpec& defaults);

}  // namespace actorflow

#endif  // ACTORFLOW_PLACEMENT_DEVICE_NAME_H_
