#include "actors/cluster/driver_environment.h"

namespace actorflow {
namespace {

thread_local DriverEnvironment* current_environment = nullptr;

}  // namespace

DriverEnvironment* CurrentDriverEnvironment() { return current_environment; }

ScopedDriverEnvironment::ScopedDriverEnvironment(DriverEnvironment* environment)
    : previous_(current_environment) {
  current_environment = environment;
}

ScopedDriverEnvironment::~ScopedDriverEnvironment() { current_environment = previous_; }

}  // namespace actorflow
