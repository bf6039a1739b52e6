#include "actors/transport/server_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

using ::testing::HasSubstr;

TEST(ServerLimitsTest, AGraphAtTheLimitFitsAndOneNodeMoreIsResourceExhaustedNamingTheFlag) {
  RequestLimits limits;
  limits.max_graph_nodes = 100;
  EXPECT_TRUE(CheckGraphNodes(100, limits).ok());
  Status over = CheckGraphNodes(101, limits);
  EXPECT_EQ(over.code(), Code::kResourceExhausted);
  EXPECT_THAT(over.message(), HasSubstr("graph has 101 nodes, over --max-graph-nodes 100"));
}

TEST(ServerLimitsTest, AFedTensorOverTheLimitIsResourceExhaustedNamingTheFeedAndTheFlag) {
  RequestLimits limits;
  limits.max_tensor_bytes = 1024;
  EXPECT_TRUE(CheckFedTensorBytes("x", 1024, limits).ok());
  Status over = CheckFedTensorBytes("x:0", 1028, limits);
  EXPECT_EQ(over.code(), Code::kResourceExhausted);
  EXPECT_THAT(over.message(), HasSubstr("feed 'x:0' has 1028 bytes, over --max-tensor-bytes 1024"));
}

TEST(ServerLimitsTest, LimitsThatAreNotPositiveAreRefusedNamingTheFlag) {
  EXPECT_TRUE(ValidateLimits(TransportLimits(), RequestLimits()).ok());
  TransportLimits transport;
  transport.max_connections = 0;
  Status bad = ValidateLimits(transport, RequestLimits());
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("--max-connections must be > 0, not 0"));
  RequestLimits requests;
  requests.max_tensor_bytes = -1;
  EXPECT_THAT(ValidateLimits(TransportLimits(), requests).message(),
              HasSubstr("--max-tensor-bytes"));
}

TEST(ServerLimitsTest, TheDefaultsLetAFedTensorAtItsLimitFitInOneMessage) {
  EXPECT_LT(kDefaultMaxTensorBytes, kDefaultMaxMessageBytes);
  EXPECT_LT(kMaxHandshakeBytes, kDefaultMaxMessageBytes);
}

}  // namespace
}  // namespace actorflow
