// The cause a lost peer is named with, from the ends the transport recorded.
#include "actors/transport/connection_ends.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(ConnectionEndsTest, NamesHowThePeersOwnConnectionEnded) {
  ForgetConnectionEnds();
  NoteConnectionEnded("10.0.0.2:2222", ConnectionEnd::kClosedAfterSilence, milliseconds(2612));
  NoteConnectionEnded("10.0.0.3:2222", ConnectionEnd::kClosedByPeer, milliseconds(3));
  EXPECT_THAT(ConnectionLossCause("10.0.0.2:2222"),
              HasSubstr("nothing came from it for 2.6 s, not even heartbeats"));
  EXPECT_THAT(ConnectionLossCause("10.0.0.3:2222"), HasSubstr("its connection closed (its process"));
}

TEST(ConnectionEndsTest, WithoutTheAddressUsesTheRecentEndsWhenTheyAgree) {
  ForgetConnectionEnds();
  NoteConnectionEnded("127.0.0.1:41000", ConnectionEnd::kClosedByPeer, milliseconds(1));
  EXPECT_THAT(ConnectionLossCause(""), HasSubstr("its connection closed (its process"));
  EXPECT_THAT(ConnectionLossCause("worker-host:2222"), HasSubstr("its connection closed (its"));
  NoteConnectionEnded("127.0.0.1:41001", ConnectionEnd::kClosedAfterSilence, milliseconds(2600));
  EXPECT_EQ(ConnectionLossCause(""), "its connection closed or went silent");
}

TEST(ConnectionEndsTest, OldEndsAndNoEndsTellNothing) {
  ForgetConnectionEnds();
  EXPECT_EQ(ConnectionLossCause("10.0.0.2:2222"), "its connection closed or went silent");
  NoteConnectionEnded("10.0.0.2:2222", ConnectionEnd::kClosedByPeer, milliseconds(1));
  EXPECT_EQ(ConnectionLossCause("10.0.0.2:2222", milliseconds(0)),
            "its connection closed or went silent");
}

// Before the transport closes a silent connection (and records its end), CAF may
// already have taken the peer's actors down: the live connection's silence tells.
TEST(ConnectionEndsTest, ALiveConnectionSilentPastItsTimeoutTellsBeforeItsEndIsRecorded) {
  ForgetConnectionEnds();
  auto busy = RegisterConnection("10.0.0.4:2222", 0);  // no detector: never silent
  auto silent = RegisterConnection("10.0.0.5:2222", 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (silent->SilentFor() < milliseconds(2) && std::chrono::steady_clock::now() < deadline) {
  }
  EXPECT_THAT(ConnectionLossCause("10.0.0.5:2222"), HasSubstr("nothing came from it for"));
  // A listener that knows no address: the one silent connection tells.
  EXPECT_THAT(ConnectionLossCause(""), HasSubstr("nothing came from it for"));
  EXPECT_EQ(ConnectionLossCause("10.0.0.4:2222").find("nothing came"), std::string::npos)
      << "an exact peer that is not silent is not taken for the silent one";
  // Once it ended (its end recorded instead), it no longer counts as live.
  silent->Ended();
  EXPECT_EQ(ConnectionLossCause(""), "its connection closed or went silent");
  busy->BytesArrived();
}

}  // namespace
}  // namespace actorflow
