// Placeholder until the rnn ops land: a test that their builders' header compiles.
#include "graph/rnn_ops.h"

#include <gtest/gtest.h>

TEST(RnnOpsTest, HeaderCompiles) { SUCCEED(); }
