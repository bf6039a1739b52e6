#include "graph/rnn_ops.h"

namespace actorflow {}  // namespace actorflow
