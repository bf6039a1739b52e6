// Placeholder until the shape ops land: a test that their builders' header compiles.
#include "graph/shape_ops.h"

#include <gtest/gtest.h>

TEST(ShapeOpsTest, HeaderCompiles) { SUCCEED(); }
