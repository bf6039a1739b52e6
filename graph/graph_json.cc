#include "graph/graph_json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "graph/tensor_json.h"

namespace actorflow {
namespace {

using Json = nlohmann::json;
// Written output keeps keys in reading order: "name", "op", "inputs", ...
using OrderedJson = nlohmann::ordered_json;

constexpr Json::error_handler_t kReplaceBadUtf8 = Json::error_handler_t::replace;

// ---- Reading ---------------------------------------------------------------------

StatusOr<int64_t> ReadInt64(const Json& v) {
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return InvalidArgument("integer " + DescribeJson(v) + " is out of range for int64");
  }
  return v.get<int64_t>();
}

StatusOr<AttrValue> ListAttrFromJson(const Json& list) {
  if (list.empty()) return AttrValue(std::vector<int64_t>{});
  bool all_strings = true;
  bool all_numbers = true;
  bool all_integers = true;
  for (const Json& e : list) {
    all_strings = all_strings && e.is_string();
    all_numbers = all_numbers && e.is_number();
    all_integers = all_integers && e.is_number_integer();
  }
  if (all_strings) return AttrValue(list.get<std::vector<std::string>>());
  if (all_integers) {
    std::vector<int64_t> values;
    for (const Json& e : list) {
      AF_ASSIGN_OR_RETURN(int64_t v, ReadInt64(e));
      values.push_back(v);
    }
    return AttrValue(std::move(values));
  }
  if (all_numbers) return AttrValue(list.get<std::vector<double>>());
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string() && !list[i].is_number()) {
      return InvalidArgument("a list attr holds only numbers or only strings; element " +
                             std::to_string(i) + " is " + DescribeJson(list[i]));
    }
  }
  return InvalidArgument("a list attr holds only numbers or only strings, not both");
}

StatusOr<AttrValue> AttrFromJson(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return AttrValue(Shape::UnknownRank());
    case Json::value_t::boolean: return AttrValue(v.get<bool>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: {
      AF_ASSIGN_OR_RETURN(int64_t i, ReadInt64(v));
      return AttrValue(i);
    }
    case Json::value_t::number_float: return AttrValue(v.get<double>());
    case Json::value_t::string: return AttrValue(v.get<std::string>());
    case Json::value_t::array: return ListAttrFromJson(v);
    case Json::value_t::object: {
      AF_ASSIGN_OR_RETURN(Tensor t, TensorFromJson(v));
      return AttrValue(std::move(t));
    }
    default: break;
  }
  return InvalidArgument("unsupported value " + DescribeJson(v));
}

Status CheckKeys(const Json& object, std::initializer_list<const char*> allowed,
                 const std::string& where) {
  for (const auto& item : object.items()) {
    bool known = false;
    std::string expected;
    for (const char* key : allowed) {
      known = known || item.key() == key;
      expected += (expected.empty() ? "" : ", ") + std::string(key);
    }
    if (!known) {
      return InvalidArgument(where + ": unknown key \"" + item.key() + "\" (expected " +
                             expected + ")");
    }
  }
  return Status::OK();
}

// Reads a string member; `required` decides whether absence is an error.
Status ReadString(const Json& node, const char* key, bool required, const std::string& where,
                  std::string* out) {
  auto it = node.find(key);
  if (it == node.end()) {
    if (!required) return Status::OK();
    return InvalidArgument(where + ": missing \"" + key + "\"");
  }
  if (!it->is_string()) {
    return InvalidArgument(where + ": \"" + key + "\" must be a string, got " + DescribeJson(*it));
  }
  *out = it->get<std::string>();
  return Status::OK();
}

StatusOr<NodeDef> NodeDefFromJson(const Json& node, size_t index) {
  std::string where = "nodes[" + std::to_string(index) + "]";
  if (!node.is_object()) {
    return InvalidArgument(where + ": a node must be an object, got " + DescribeJson(node));
  }
  NodeDef def;
  AF_RETURN_IF_ERROR(ReadString(node, "name", true, where, &def.name));
  where = "node '" + def.name + "'";
  AF_RETURN_IF_ERROR(CheckKeys(node, {"name", "op", "inputs", "attrs", "device"}, where));
  AF_RETURN_IF_ERROR(ReadString(node, "op", true, where, &def.op));
  AF_RETURN_IF_ERROR(ReadString(node, "device", false, where, &def.device));

  if (auto it = node.find("inputs"); it != node.end()) {
    if (!it->is_array()) {
      return InvalidArgument(where + ": \"inputs\" must be a list of strings, got " +
                             DescribeJson(*it));
    }
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& input = (*it)[i];
      if (!input.is_string()) {
        return InvalidArgument(where + ": inputs[" + std::to_string(i) +
                               "] must be a string (\"node\", \"node:k\" or \"^node\"), got " +
                               DescribeJson(input));
      }
      def.inputs.push_back(input.get<std::string>());
    }
  }

  if (auto it = node.find("attrs"); it != node.end()) {
    if (!it->is_object()) {
      return InvalidArgument(where + ": \"attrs\" must be an object, got " + DescribeJson(*it));
    }
    for (const auto& attr : it->items()) {
      auto value = AttrFromJson(attr.value());
      if (!value.ok()) return value.status().WithContext(where + ": attr '" + attr.key() + "'");
      def.attrs.emplace(attr.key(), std::move(value).value());
    }
  }
  return def;
}

// `what` prefixes every error: "graph JSON" or a file path.
StatusOr<std::vector<NodeDef>> ParseGraphJsonAs(std::string_view text, const std::string& what) {
  AF_ASSIGN_OR_RETURN(Json root, ParseJsonText(text, what));
  if (!root.is_object()) {
    return InvalidArgument(what + ": expected an object with \"format\" and \"nodes\", got " +
                           DescribeJson(root));
  }
  auto format = root.find("format");
  if (format == root.end()) {
    return InvalidArgument(what + ": missing \"format\" (expected \"" +
                           std::string(kGraphJsonFormat) + "\")");
  }
  if (!format->is_string() || format->get_ref<const std::string&>() != kGraphJsonFormat) {
    return InvalidArgument(what + ": unsupported format " + DescribeJson(*format) +
                           " (expected \"" + std::string(kGraphJsonFormat) + "\")");
  }
  AF_RETURN_IF_ERROR(CheckKeys(root, {"format", "nodes"}, what));
  auto nodes = root.find("nodes");
  if (nodes == root.end()) return InvalidArgument(what + ": missing \"nodes\"");
  if (!nodes->is_array()) {
    return InvalidArgument(what + ": \"nodes\" must be a list, got " + DescribeJson(*nodes));
  }
  std::vector<NodeDef> defs;
  defs.reserve(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i) {
    auto def = NodeDefFromJson((*nodes)[i], i);
    if (!def.ok()) return def.status().WithContext(what);
    defs.push_back(std::move(def).value());
  }
  return defs;
}

// ---- Writing ---------------------------------------------------------------------

// A float attr; JSON has no NaN or infinity, so those become the strings tensor data
// uses. Integral values keep their ".0" so that they read back as doubles.
OrderedJson FloatAttrToJson(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

OrderedJson AttrToJson(const AttrValue& attr) {
  return std::visit(
      [](const auto& v) -> OrderedJson {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, double>) {
          return FloatAttrToJson(v);
        } else if constexpr (std::is_same_v<T, DType>) {
          return DTypeName(v);
        } else if constexpr (std::is_same_v<T, Shape>) {
          if (v.unknown_rank()) return nullptr;
          return v.dims();
        } else if constexpr (std::is_same_v<T, Tensor>) {
          return TensorToOrderedJson(v);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          OrderedJson list = OrderedJson::array();
          for (double d : v) list.push_back(FloatAttrToJson(d));
          return list;
        } else {
          // int64_t, bool, std::string, and lists of int64_t or std::string.
          return v;
        }
      },
      attr.value());
}

OrderedJson NodeDefToJson(const NodeDef& def) {
  OrderedJson node = OrderedJson::object();
  node["name"] = def.name;
  node["op"] = def.op;
  if (!def.inputs.empty()) node["inputs"] = def.inputs;
  if (!def.attrs.empty()) {
    OrderedJson attrs = OrderedJson::object();
    for (const auto& [name, value] : def.attrs) attrs[name] = AttrToJson(value);
    node["attrs"] = std::move(attrs);
  }
  if (!def.device.empty()) node["device"] = def.device;
  return node;
}

std::string Dump(const OrderedJson& j) { return j.dump(-1, ' ', false, kReplaceBadUtf8); }

// One line with a space after each ':' and ',' (nlohmann's compact form has none).
void DumpSpaced(const OrderedJson& j, std::string* out) {
  if (j.is_object()) {
    *out += '{';
    bool first = true;
    for (const auto& item : j.items()) {
      if (!first) *out += ", ";
      first = false;
      *out += Dump(OrderedJson(item.key())) + ": ";
      DumpSpaced(item.value(), out);
    }
    *out += '}';
  } else if (j.is_array()) {
    *out += '[';
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) *out += ", ";
      DumpSpaced(j[i], out);
    }
    *out += ']';
  } else {
    *out += Dump(j);
  }
}

}  // namespace

StatusOr<std::vector<NodeDef>> ParseGraphJson(std::string_view text) {
  return ParseGraphJsonAs(text, "graph JSON");
}

std::string SerializeGraphJson(const std::vector<NodeDef>& nodes, bool pretty) {
  const std::string format = Dump(OrderedJson(kGraphJsonFormat));
  if (!pretty) {
    std::string out = "{\"format\":" + format + ",\"nodes\":[";
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i > 0) out += ',';
      out += Dump(NodeDefToJson(nodes[i]));
    }
    return out + "]}";
  }
  std::string out = "{\"format\": " + format + ",\n \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    out += i == 0 ? "\n  " : ",\n  ";
    DumpSpaced(NodeDefToJson(nodes[i]), &out);
  }
  out += nodes.empty() ? "]}\n" : "\n ]}\n";
  return out;
}

StatusOr<std::unique_ptr<Graph>> GraphFromJson(std::string_view text) {
  AF_ASSIGN_OR_RETURN(std::vector<NodeDef> defs, ParseGraphJson(text));
  return Graph::FromNodeDefs(defs);
}

std::string GraphToJson(const Graph& graph, bool pretty) {
  return SerializeGraphJson(graph.ToNodeDefs(), pretty);
}

StatusOr<std::unique_ptr<Graph>> LoadGraphFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return NotFound("graph file '" + path + "': cannot open: " + std::strerror(errno));
  }
  std::string text;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) text.append(buf, n);
  const bool failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  if (failed) {
    return NotFound("graph file '" + path + "': cannot read: " + std::strerror(read_errno));
  }
  AF_ASSIGN_OR_RETURN(std::vector<NodeDef> defs, ParseGraphJsonAs(text, path));
  auto graph = Graph::FromNodeDefs(defs);
  if (!graph.ok()) return graph.status().WithContext(path);
  return graph;
}

}  // namespace actorflow
