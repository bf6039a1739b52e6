// Placeholder until the math ops land: a test that their builders' header compiles.
#include "graph/math_ops.h"

#include <gtest/gtest.h>

TEST(MathOpsTest, HeaderCompiles) { SUCCEED(); }
