// Graph JSON: the on-disk and on-the-wire form of a GraphDef (a list of NodeDefs).
//
//   {"format": "actorflow.graph/1",
//    "nodes": [
//     {"name": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 2]}},
//     {"name": "w", "op": "Variable", "attrs": {"dtype": "float32", "shape": [2, 3]}},
//     {"name": "m", "op": "MatMul", "inputs": ["p", "w"], "device": "/device:CPU:0"}
//    ]}
//
// A node has "name" and "op" (strings) and optionally "inputs" ("node", "node:k" for
// output k, "^node" for a control dependency), "attrs" and "device". Unknown keys are
// errors, so that a misspelled "input" cannot silently drop edges. Attr values map
// to AttrValue as written; Graph::AddNode converts them to the declared types:
//   integer -> int64_t             non-integer number -> double      string, bool
//   list of integers -> std::vector<int64_t> (also the empty list)
//   list of numbers with a non-integer -> std::vector<double>
//   list of strings -> std::vector<std::string>
//   null -> Shape::UnknownRank()   {"dtype", "shape", "data"} -> Tensor (tensor_json.h)
// Dtypes are written as their names and shapes as lists, so they read back as strings
// and lists that the declared attr types convert again.
//
// Guarantees: serialization is deterministic (attrs in name order, nodes in the given
// order, "inputs"/"attrs"/"device" left out when empty), and a graph round-trips
// exactly: parse -> Graph -> serialize -> parse -> Graph gives equal NodeDefs, and
// serializing either graph gives the same text. A float attr that is NaN or infinite
// is written as "nan"/"inf"/"-inf", which reads back as a string (a float attr
// declared by an op then fails to convert).
//
// Errors are InvalidArgument naming the culprit (line and column for malformed JSON,
// the node and attr otherwise); nothing here throws.
// Thread safety: all functions are pure and may be called concurrently.
#ifndef ACTORFLOW_GRAPH_GRAPH_JSON_H_
#define ACTORFLOW_GRAPH_GRAPH_JSON_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace actorflow {

// The value of "format" that this version reads and writes.
inline constexpr char kGraphJsonFormat[] = "actorflow.graph/1";

// Reads graph JSON into NodeDefs, in file order, without resolving ops or inputs.
// Errors start with "graph JSON: ".
StatusOr<std::vector<NodeDef>> ParseGraphJson(std::string_view text);

// Writes NodeDefs as graph JSON. Compact by default; `pretty` puts one node on each
// line (and ends with a newline).
std::string SerializeGraphJson(const std::vector<NodeDef>& nodes, bool pretty = false);

// ParseGraphJson followed by Graph::FromNodeDefs, whose errors (unknown ops, dangling
// inputs, cycles, attrs of the wrong type; each naming the node) pass through.
StatusOr<std::unique_ptr<Graph>> GraphFromJson(std::string_view text);

// The graph's NodeDefs (graph order, converted attrs) as graph JSON.
std::string GraphToJson(const Graph& graph, bool pretty = false);

// Reads and builds the graph in the file at `path`. NotFound naming the path when the
// file cannot be read; every other error is prefixed by "<path>: ".
StatusOr<std::unique_ptr<Graph>> LoadGraphFile(const std::string& path);

}  // namespace actorflow

#endif  // ACTORFLOW_GRAPH_GRAPH_JSON_H_
