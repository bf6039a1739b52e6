#include "graph/graph_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace actorflow {
namespace {

// The contract's example, verbatim.
constexpr char kExampleGraph[] = R"json({"format": "actorflow.graph/1",
 "nodes": [
  {"name": "x", "op": "Const", "attrs": {"value": {"dtype": "int32", "shape": [], "data": [2]}}},
  {"name": "p", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": [-1, 2]}},
  {"name": "w", "op": "Variable", "attrs": {"dtype": "float32", "shape": [2, 3]}},
  {"name": "w_init", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [2, 3], "data": [1, 2, 3, 4, 5, 6]}}},
  {"name": "init", "op": "Assign", "inputs": ["w", "w_init"]},
  {"name": "m", "op": "MatMul", "inputs": ["p", "w"], "attrs": {"transpose_b": false}, "device": "/device:CPU:0"}
 ]})json";

// Every attr kind, control and indexed inputs, devices, and non-finite constants.
constexpr char kEveryAttrKindGraph[] = R"json({"format": "actorflow.graph/1", "nodes": [
  {"name": "any", "op": "Placeholder", "attrs": {"dtype": "float32", "shape": null}},
  {"name": "logits", "op": "Placeholder", "attrs": {"dtype": "float", "shape": [-1, 3]},
   "device": "/job:worker/task:0/device:CPU:0"},
  {"name": "labels", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [1, 3],
   "data": [0, 0.5, 0.5]}}},
  {"name": "weird", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [2, 3],
   "data": ["nan", "inf", "-inf", -0.0, 0.1, 3]}}},
  {"name": "wide", "op": "Const", "attrs": {"value": {"dtype": "float64", "shape": [3],
   "data": [0.1, 1e300, "-inf"]}}},
  {"name": "flags", "op": "Const", "attrs": {"value": {"dtype": "bool", "shape": [2],
   "data": [true, false]}}},
  {"name": "big", "op": "Const", "attrs": {"value": {"dtype": "int64", "shape": [2],
   "data": [-9223372036854775808, 9223372036854775807]}}},
  {"name": "v", "op": "Variable", "attrs": {"dtype": "float32", "shape": [2, 3],
   "container": "c", "shared_name": "shared_v"}, "device": "/job:ps/task:0"},
  {"name": "init", "op": "Assign", "inputs": ["v", "weird"], "attrs": {"validate_shape": true}},
  {"name": "xent", "op": "SoftmaxCrossEntropyWithLogits", "inputs": ["logits", "labels"]},
  {"name": "backprop", "op": "Identity", "inputs": ["xent:1", "^init"]},
  {"name": "argmax", "op": "ArgMax", "inputs": ["xent:1"], "attrs": {"axis": -1}},
  {"name": "as_int", "op": "Cast", "inputs": ["weird"], "attrs": {"dtype": "int64"}},
  {"name": "t", "op": "Transpose", "inputs": ["v"], "attrs": {"perm": [1, 0]}},
  {"name": "sum_all", "op": "Sum", "inputs": ["v"], "attrs": {"axis": [0, 1], "keep_dims": true}},
  {"name": "sum_one", "op": "Sum", "inputs": ["v"], "attrs": {"axis": 1}},
  {"name": "part", "op": "Slice", "inputs": ["v"], "attrs": {"begin": [0, 1], "size": [-1, 2]}},
  {"name": "noise", "op": "RandomUniform", "attrs": {"shape": [2], "dtype": "float64",
   "seed": 7, "minval": 0.25, "maxval": 2,
   "_class": ["loc:@v"], "_scales": [0.5, 1], "_none": [], "_note": "\u00e9\"\n"}},
  {"name": "done", "op": "NoOp", "inputs": ["^init", "^noise"]}
]})json";

using ::testing::HasSubstr;

std::unique_ptr<Graph> MustBuild(const std::string& text) {
  auto graph = GraphFromJson(text);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? std::move(graph).value() : std::make_unique<Graph>();
}

// parse -> Graph -> serialize -> parse -> Graph: equal NodeDefs, identical text, for
// the compact and the pretty form. A failure names every difference it found.
::testing::AssertionResult RoundTripsExactly(const std::string& text) {
  auto first = GraphFromJson(text);
  if (!first.ok()) return ::testing::AssertionFailure() << "does not parse: " << first.status();
  if ((*first)->num_nodes() <= 0) return ::testing::AssertionFailure() << "has no nodes";
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  auto fail = [&]() -> ::testing::AssertionResult& {
    if (!failed) result = ::testing::AssertionFailure();
    failed = true;
    return result;
  };
  for (bool pretty : {false, true}) {
    const char* form = pretty ? "pretty" : "compact";
    const std::string written = GraphToJson(**first, pretty);
    auto second = GraphFromJson(written);
    if (!second.ok()) {
      return fail() << "the " << form << " form does not parse: " << second.status() << "\n"
                    << written;
    }
    const std::vector<NodeDef> read_back = (*second)->ToNodeDefs();
    if (!(read_back == (*first)->ToNodeDefs())) {
      fail() << "the NodeDefs read back from the " << form
             << " form differ: " << ::testing::PrintToString(read_back) << " vs "
             << ::testing::PrintToString((*first)->ToNodeDefs()) << "\n"
             << written << "\n";
    }
    const std::string rewritten = GraphToJson(**second, pretty);
    if (rewritten != written) {
      fail() << "the " << form << " form written again differs:\n"
             << rewritten << "\nvs\n"
             << written << "\n";
    }
  }
  return result;
}

TEST(GraphJson, ContractExampleRoundTripsExactly) {
  EXPECT_TRUE(RoundTripsExactly(kExampleGraph));
}

TEST(GraphJson, GraphWithEveryAttrKindRoundTripsExactly) {
  EXPECT_TRUE(RoundTripsExactly(kEveryAttrKindGraph));
}

TEST(GraphJson, ParsesAttrsFaithfullyBeforeConversion) {
  auto defs = ParseGraphJson(kExampleGraph);
  ASSERT_TRUE(defs.ok()) << defs.status();
  ASSERT_EQ(defs->size(), 6u);
  const NodeDef& x = (*defs)[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.op, "Const");
  EXPECT_EQ(x.attrs.at("value"), AttrValue(Tensor::Scalar<int32_t>(2)));
  const NodeDef& p = (*defs)[1];
  EXPECT_EQ(p.attrs.at("dtype"), AttrValue("float32"));
  EXPECT_EQ(p.attrs.at("shape"), AttrValue(std::vector<int64_t>{-1, 2}));
  const NodeDef& init = (*defs)[4];
  EXPECT_EQ(init.inputs, (std::vector<std::string>{"w", "w_init"}));
  EXPECT_TRUE(init.attrs.empty());
  const NodeDef& m = (*defs)[5];
  EXPECT_EQ(m.attrs.at("transpose_b"), AttrValue(false));
  EXPECT_EQ(m.device, "/device:CPU:0");
}

TEST(GraphJson, MapsEveryJsonValueKindToItsAttrValue) {
  auto defs = ParseGraphJson(kEveryAttrKindGraph);
  ASSERT_TRUE(defs.ok()) << defs.status();
  const AttrMap& noise = defs->at(17).attrs;
  EXPECT_EQ(noise.at("seed"), AttrValue(int64_t{7}));
  EXPECT_EQ(noise.at("minval"), AttrValue(0.25));
  EXPECT_EQ(noise.at("maxval"), AttrValue(int64_t{2}));
  EXPECT_EQ(noise.at("_class"), AttrValue(std::vector<std::string>{"loc:@v"}));
  EXPECT_EQ(noise.at("_scales"), AttrValue(std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(noise.at("_none"), AttrValue(std::vector<int64_t>{}));
  EXPECT_EQ(noise.at("_note"), AttrValue("\xc3\xa9\"\n"));
  EXPECT_EQ(defs->at(0).attrs.at("shape"), AttrValue(Shape::UnknownRank()));
  EXPECT_EQ(defs->at(14).attrs.at("keep_dims"), AttrValue(true));
  EXPECT_EQ(defs->at(15).attrs.at("axis"), AttrValue(int64_t{1}));
  EXPECT_EQ(defs->at(10).inputs, (std::vector<std::string>{"xent:1", "^init"}));
}

TEST(GraphJson, WritesConvertedAttrsBackAsJson) {
  auto graph = MustBuild(kEveryAttrKindGraph);
  const std::string text = GraphToJson(*graph);
  // DType -> name ("float" alias normalized), unknown-rank Shape -> null.
  EXPECT_THAT(
      text,
      HasSubstr(R"({"name":"any","op":"Placeholder","attrs":{"dtype":"float32","shape":null}})"))
      << text;
  EXPECT_THAT(text, HasSubstr(R"("attrs":{"dtype":"float32","shape":[-1,3]})")) << text;
  // Declared floats stay floats even when integral; ints stay ints.
  EXPECT_THAT(text, HasSubstr(R"("maxval":2.0,"minval":0.25,"seed":7)")) << text;
  EXPECT_THAT(text, HasSubstr(R"("_scales":[0.5,1.0])")) << text;
  // Tensors: dtype, shape, data; non-finite as strings, integral floats as integers.
  EXPECT_THAT(
      text,
      HasSubstr(R"({"dtype":"float32","shape":[2,3],"data":["nan","inf","-inf",-0.0,0.1,3]})"))
      << text;
  EXPECT_THAT(text, HasSubstr(R"("data":[-9223372036854775808,9223372036854775807])")) << text;
  EXPECT_THAT(text, HasSubstr(R"("inputs":["xent:1","^init"])")) << text;
  EXPECT_THAT(text, HasSubstr(R"("device":"/job:ps/task:0")")) << text;
}

TEST(GraphJson, SerializationIsCompactDeterministicAndOmitsEmptyKeys) {
  std::vector<NodeDef> defs(2);
  defs[0].name = "b";
  defs[0].op = "NoOp";
  defs[1].name = "a";
  defs[1].op = "Identity";
  defs[1].inputs = {"x:1", "^b"};
  defs[1].attrs["z"] = AttrValue(int64_t{1});
  defs[1].attrs["T"] = AttrValue(DType::kInt32);
  defs[1].device = "/device:CPU:0";
  const std::string text = SerializeGraphJson(defs);
  EXPECT_EQ(text,
            R"({"format":"actorflow.graph/1","nodes":[{"name":"b","op":"NoOp"},)"
            R"({"name":"a","op":"Identity","inputs":["x:1","^b"],"attrs":{"T":"int32","z":1},)"
            R"("device":"/device:CPU:0"}]})");
  EXPECT_EQ(SerializeGraphJson(defs), text);
}

TEST(GraphJson, PrettyOutputHasOneNodePerLine) {
  auto graph = MustBuild(kExampleGraph);
  const std::string text = GraphToJson(*graph, /*pretty=*/true);
  EXPECT_EQ(text.rfind("{\"format\": \"actorflow.graph/1\",\n \"nodes\": [\n", 0), 0u) << text;
  EXPECT_THAT(
      text,
      HasSubstr("\n  {\"name\": \"init\", \"op\": \"Assign\", \"inputs\": [\"w\", \"w_init\"]},\n"))
      << text;
  EXPECT_THAT(
      text, HasSubstr("\n  {\"name\": \"m\", \"op\": \"MatMul\", \"inputs\": [\"p\", \"w\"], "
                      "\"attrs\": {\"transpose_b\": false}, \"device\": \"/device:CPU:0\"}\n ]}\n"))
      << text;
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, static_cast<size_t>(graph->num_nodes()) + 3);
}

TEST(GraphJson, EmptyGraphRoundTrips) {
  for (bool pretty : {false, true}) {
    const std::string text = SerializeGraphJson({}, pretty);
    auto defs = ParseGraphJson(text);
    ASSERT_TRUE(defs.ok()) << defs.status() << "\n" << text;
    EXPECT_TRUE(defs->empty());
  }
}

// Errors --------------------------------------------------------------------------

// Whether GraphFromJson rejects `text` with InvalidArgument and a message holding
// every one of `parts`; a failure says which are missing.
::testing::AssertionResult RejectedSaying(const std::string& text,
                                          const std::vector<std::string>& parts) {
  auto graph = GraphFromJson(text);
  if (graph.ok()) return ::testing::AssertionFailure() << "accepted: " << text;
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  auto fail = [&]() -> ::testing::AssertionResult& {
    if (!failed) result = ::testing::AssertionFailure() << graph.status() << ":";
    failed = true;
    return result;
  };
  if (graph.status().code() != Code::kInvalidArgument) fail() << " not InvalidArgument;";
  for (const std::string& part : parts) {
    if (graph.status().message().find(part) == std::string::npos) {
      fail() << " missing '" << part << "';";
    }
  }
  return result;
}

std::string WithNodes(const std::string& nodes) {
  return R"({"format": "actorflow.graph/1", "nodes": [)" + nodes + "]}";
}

TEST(GraphJsonErrors, MalformedJsonNamesLineAndColumn) {
  // The column is that of the last character of the offending token ("op").
  EXPECT_TRUE(RejectedSaying(
      "{\"format\": \"actorflow.graph/1\",\n \"nodes\": [\n  {\"name\": \"x\" \"op\"}]}",
      {"graph JSON: malformed JSON at line 3, column 19: ", "expected '}'"}));
}

TEST(GraphJsonErrors, FormatMustBePresentAndSupported) {
  EXPECT_TRUE(
      RejectedSaying(R"({"nodes": []})", {"graph JSON: missing \"format\"", "actorflow.graph/1"}));
  EXPECT_TRUE(RejectedSaying(R"({"format": "actorflow.graph/2", "nodes": []})",
                             {"unsupported format \"actorflow.graph/2\""}));
  EXPECT_TRUE(RejectedSaying(R"({"format": 1, "nodes": []})", {"unsupported format 1"}));
  EXPECT_TRUE(RejectedSaying(R"([])", {"expected an object with \"format\" and \"nodes\""}));
  EXPECT_TRUE(RejectedSaying(R"({"format": "actorflow.graph/1"})", {"missing \"nodes\""}));
  EXPECT_TRUE(RejectedSaying(R"({"format": "actorflow.graph/1", "nodes": {}})",
                             {"\"nodes\" must be a list"}));
  EXPECT_TRUE(RejectedSaying(R"({"format": "actorflow.graph/1", "nodes": [], "node": []})",
                             {"unknown key \"node\""}));
}

TEST(GraphJsonErrors, NodeNameAndOpMustBeStrings) {
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "NoOp"}, {"op": "NoOp"})"),
                             {"nodes[1]: missing \"name\""}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": 5, "op": "NoOp"})"),
                             {"nodes[0]: \"name\" must be a string, got 5"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a"})"), {"node 'a': missing \"op\""}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": ["NoOp"]})"),
                             {"node 'a': \"op\" must be a string, got a list"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"("a")"), {"nodes[0]: a node must be an object"}));
}

TEST(GraphJsonErrors, IllTypedNodeFieldsNameTheNode) {
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "NoOp", "input": ["b"]})"),
                             {"node 'a': unknown key \"input\""}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "Identity", "inputs": "b"})"),
                             {"node 'a': \"inputs\" must be a list of strings"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "Identity", "inputs": [1]})"),
                             {"node 'a': inputs[0] must be a string"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "NoOp", "device": 0})"),
                             {"node 'a': \"device\" must be a string"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "NoOp", "attrs": []})"),
                             {"node 'a': \"attrs\" must be an object"}));
}

TEST(GraphJsonErrors, BadAttrValuesNameTheNodeAndAttr) {
  EXPECT_TRUE(RejectedSaying(
      WithNodes(R"({"name": "c", "op": "Const", "attrs": {"value": {"dtype": "float32", "shape": [2], "data": [1]}}})"),
      {"node 'c': attr 'value': tensor: \"data\" has 1 values but shape [2] needs 2"}));
  EXPECT_TRUE(
      RejectedSaying(WithNodes(R"({"name": "t", "op": "Transpose", "attrs": {"perm": [1, "a"]}})"),
                     {"node 't': attr 'perm': a list attr holds only numbers or only strings"}));
  EXPECT_TRUE(
      RejectedSaying(WithNodes(R"({"name": "t", "op": "Transpose", "attrs": {"perm": [[1]]}})"),
                     {"node 't': attr 'perm'", "element 0 is a list"}));
  EXPECT_TRUE(RejectedSaying(
      WithNodes(R"({"name": "a", "op": "ArgMax", "attrs": {"axis": 9223372036854775808}})"),
      {"node 'a': attr 'axis': integer 9223372036854775808 is out of range"}));
}

TEST(GraphJsonErrors, GraphErrorsPropagateNamingTheNode) {
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "f", "op": "Frobnicate"})"),
                             {"node 'f'", "unknown op 'Frobnicate'"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "i", "op": "Identity", "inputs": ["nope"]})"),
                             {"node 'i'", "'nope' names no node"}));
  EXPECT_TRUE(RejectedSaying(WithNodes(R"({"name": "a", "op": "Identity", "inputs": ["b"]},
                                {"name": "b", "op": "Identity", "inputs": ["a"]})"),
                             {"cycle"}));
  EXPECT_TRUE(RejectedSaying(
      WithNodes(R"({"name": "p", "op": "Placeholder", "attrs": {"dtype": "float32"}},
                   {"name": "m", "op": "MatMul", "inputs": ["p", "p"], "attrs": {"transpose_b": "yes"}})"),
      {"node 'm'", "transpose_b"}));
  EXPECT_TRUE(RejectedSaying(
      WithNodes(R"({"name": "p", "op": "Placeholder", "attrs": {"dtype": "float16"}})"),
      {"node 'p'", "float16"}));
}

// Files ---------------------------------------------------------------------------

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

TEST(LoadGraphFile, LoadsAGraph) {
  const std::string path = TempPath("example_graph.json");
  WriteFile(path, kExampleGraph);
  auto graph = LoadGraphFile(path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ((*graph)->num_nodes(), 6);
  ASSERT_NE((*graph)->FindNode("m"), nullptr);
  EXPECT_EQ((*graph)->FindNode("m")->output_shape(0), (Shape{-1, 3}));
}

TEST(LoadGraphFile, MissingFileIsNotFoundNamingThePath) {
  const std::string path = TempPath("no_such_graph.json");
  auto graph = LoadGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kNotFound);
  EXPECT_THAT(graph.status().message(), HasSubstr(path)) << graph.status();
}

TEST(LoadGraphFile, DirectoryIsNotFoundNamingThePath) {
  const std::string path = TempPath("");
  auto graph = LoadGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kNotFound) << graph.status();
  EXPECT_THAT(graph.status().message(), HasSubstr(path)) << graph.status();
}

TEST(LoadGraphFile, ErrorsArePrefixedByThePath) {
  const std::string path = TempPath("broken_graph.json");
  WriteFile(path, "{\"format\": \"actorflow.graph/1\",\n \"nodes\": [,]}");
  auto graph = LoadGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(graph.status().message().rfind(path + ": malformed JSON at line 2, column 12: ", 0), 0u)
      << graph.status();

  WriteFile(path, WithNodes(R"({"name": "f", "op": "Frobnicate"})"));
  graph = LoadGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message().rfind(path + ": node 'f'", 0), 0u) << graph.status();

  WriteFile(path, WithNodes(R"({"op": "NoOp"})"));
  graph = LoadGraphFile(path);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().message().rfind(path + ": nodes[0]: missing \"name\"", 0), 0u)
      << graph.status();
}

}  // namespace
}  // namespace actorflow
