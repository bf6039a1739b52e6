#include "graph/math_ops.h"

namespace actorflow {}  // namespace actorflow
