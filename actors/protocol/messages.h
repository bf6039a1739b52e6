// The actor runtime's message vocabulary, in one include: the protocols of the
// device (actors/protocol/device_protocol.h), master (actors/protocol/master_protocol.h), front
// (actors/protocol/front_protocol.h), queue (actors/protocol/queue_protocol.h) and parameter shard
// (actors/protocol/shard_messages.h) actors, each documented at its typed interface alias,
// plus the wire format of every payload that crosses processes (actors/protocol/wire.h).
// Included only by actors/*.cc and tools/*.cc (CAF).
//
// Payloads travel in-process by reference (CAF does not serialize local messages,
// and a Tensor shares its buffer), so no tensor is copied by a message. Every type
// that can cross processes has an `inspect` overload (actors/protocol/wire.h) that writes a
// tensor as dtype, shape and one raw byte block; local-only types (closures, the
// client's reply handle, queue requests) are marked CAF_ALLOW_UNSAFE_MESSAGE_TYPE
// where they are defined.
#ifndef ACTORFLOW_ACTORS_PROTOCOL_MESSAGES_H_
#define ACTORFLOW_ACTORS_PROTOCOL_MESSAGES_H_

#include "actors/protocol/device_protocol.h"
#include "actors/protocol/front_protocol.h"
#include "actors/protocol/master_protocol.h"
#include "actors/protocol/queue_protocol.h"
#include "actors/protocol/shard_messages.h"
#include "actors/protocol/wire.h"

#endif  // ACTORFLOW_ACTORS_PROTOCOL_MESSAGES_H_
