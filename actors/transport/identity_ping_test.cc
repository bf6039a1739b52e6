// PingForIdentity (connect.h) against local stand-ins for a front actor: one that
// leaves its first ping unanswered (a message lost while connections settle), one
// that never answers, and one that answers with an error.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <caf/all.hpp>

#include "actors/transport/connect.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kIdentity[] = "actorflow server /job:worker/replica:0/task:1";

struct SilentState {
  int pings = 0;
  // Kept, never delivered: the ping stays unanswered.
  std::vector<caf::response_promise> unanswered;
};

// Answers a ping from the `silent_pings + 1`-th on; the earlier ones never.
caf::behavior FrontThatDropsPings(caf::stateful_actor<SilentState>* self, int silent_pings) {
  return {[self, silent_pings](ping_atom) -> caf::result<std::string> {
    if (self->state.pings++ < silent_pings) {
      self->state.unanswered.push_back(self->make_response_promise());
      return caf::delegated<std::string>();
    }
    return std::string(kIdentity);
  }};
}

caf::behavior FrontThatFails() {
  return {[](ping_atom) -> caf::result<std::string> {
    return caf::make_error(caf::sec::unexpected_message);
  }};
}

class IdentityPingTest : public ::testing::Test {
 protected:
  caf::actor_system_config config_;
  caf::actor_system system_{config_};
};

TEST_F(IdentityPingTest, APingLeftUnansweredIsSentAgainWithinTheDeadline) {
  caf::actor front = system_.spawn(FrontThatDropsPings, 1);
  const auto start = steady_clock::now();
  StatusOr<std::string> identity = PingForIdentity(
      system_, caf::actor_cast<FrontActor>(front), start + milliseconds(20000), "worker 1");
  ASSERT_TRUE(identity.ok()) << identity.status();
  EXPECT_EQ(*identity, kIdentity);
  // One slice (2 s) lost to the first ping, not the 20 s deadline.
  EXPECT_LT(steady_clock::now() - start, milliseconds(10000));
  caf::anon_send_exit(front, caf::exit_reason::kill);
}

TEST_F(IdentityPingTest, SilenceUntilTheDeadlineIsDeadlineExceededNamingThePeer) {
  caf::actor front = system_.spawn(FrontThatDropsPings, 1000);
  StatusOr<std::string> identity =
      PingForIdentity(system_, caf::actor_cast<FrontActor>(front),
                      steady_clock::now() + milliseconds(300), "/job:worker/task:1 at x:1");
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().code(), Code::kDeadlineExceeded) << identity.status();
  EXPECT_THAT(identity.status().message(), HasSubstr("/job:worker/task:1 at x:1"));
  EXPECT_THAT(identity.status().message(), HasSubstr("completed CAF's handshake but answered none of"));
  caf::anon_send_exit(front, caf::exit_reason::kill);
}

TEST_F(IdentityPingTest, AnErrorReplyIsFailedPreconditionNamingThePeer) {
  caf::actor front = system_.spawn(FrontThatFails);
  StatusOr<std::string> identity =
      PingForIdentity(system_, caf::actor_cast<FrontActor>(front),
                      steady_clock::now() + milliseconds(5000), "/job:ps/task:0 at y:2");
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.status().code(), Code::kFailedPrecondition) << identity.status();
  EXPECT_THAT(identity.status().message(), HasSubstr("/job:ps/task:0 at y:2 is not an actorflow"));
}

}  // namespace
}  // namespace actorflow
