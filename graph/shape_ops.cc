#include "graph/shape_ops.h"

namespace actorflow {}  // namespace actorflow
