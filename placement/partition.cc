#include "placement/partition.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <utility>

#include "graph/tensor.h"

namespace actorflow {
namespace {

constexpr int kControlSlot = -1;  // the "output index" of a control edge's pair

// "/job:a/replica:0/task:0/device:CPU:1" -> "job_a_replica_0_task_0_device_CPU_1".
std::string SanitizeDevice(const std::string& device) {
  std::string out;
  for (char c : device) {
    if (c == '/' || c == ':' || c == '^' || c == ' ') {
      if (!out.empty()) out += '_';
    } else {
      out += c;
    }
  }
  return out;
}

// One partition under construction.
struct Builder {
  std::vector<NodeDef> defs;
  std::set<std::string> names;
  std::map<size_t, std::string> feed_inputs;  // feed position -> tensor in this partition
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  std::vector<std::string> sends;
};

class Partitioner {
 public:
  Partitioner(const Graph& graph, const std::map<int, Placement>& placement,
              const std::vector<Endpoint>& feeds)
      : graph_(graph), placement_(placement), feeds_(feeds), device_of_(graph.num_nodes()) {}

  StatusOr<std::vector<DevicePartition>> Run(const std::vector<const Node*>& nodes,
                                             const std::vector<Endpoint>& fetches,
                                             const std::vector<const Node*>& targets);

 private:
  bool InSet(const Node* n) const { return !device_of_[n->id()].empty(); }
  Builder& At(const std::string& device) { return builders_[device]; }
  // A name used neither in the original graph nor in the partition of `device`.
  std::string NewName(const std::string& device, const std::string& base);
  void Add(const std::string& device, NodeDef def);

  StatusOr<std::string> DataInput(const Node* consumer, int k, const std::string& device);
  StatusOr<std::string> RefInput(const Node* consumer, int k, const std::string& device);
  std::string FeedInput(size_t feed, const std::string& device);
  // The _Recv on `dst` carrying src:index (kControlSlot: src's completion).
  std::string RecvFor(const Node* src, int index, const std::string& dst);

  const Graph& graph_;
  const std::map<int, Placement>& placement_;
  const std::vector<Endpoint>& feeds_;
  std::vector<std::string> device_of_;  // by node id; "" = not in the step
  std::map<std::string, Builder> builders_;
  std::map<std::tuple<int, int, std::string>, std::string> recvs_;
  std::map<int, std::string> variable_copies_;  // Variable id -> device of its copy
};

std::string Partitioner::NewName(const std::string& device, const std::string& base) {
  const Builder& b = At(device);
  std::string name = base;
  for (int i = 1; graph_.FindNode(name) != nullptr || b.names.count(name); ++i) {
    name = base + "_" + std::to_string(i);
  }
  return name;
}

void Partitioner::Add(const std::string& device, NodeDef def) {
  Builder& b = At(device);
  def.device = device;
  b.names.insert(def.name);
  b.defs.push_back(std::move(def));
}

std::string Partitioner::FeedInput(size_t feed, const std::string& device) {
  Builder& b = At(device);
  auto it = b.feed_inputs.find(feed);
  if (it != b.feed_inputs.end()) return it->second;
  const Endpoint& e = feeds_[feed];
  std::string local;
  if (InSet(e.node) && device_of_[e.node->id()] == device) {
    local = e.ToString();  // the producer runs here; the executor overrides its output
  } else {
    // A Variable keeps its own name free for a ref-input copy.
    local = e.index == 0 && e.node->op() != "Variable"
                ? e.node->name()
                : NewName(device, "_feed/" + e.node->name() + "_" + std::to_string(e.index));
    NodeDef stand_in;
    stand_in.name = local;
    stand_in.op = "Placeholder";
    stand_in.attrs["dtype"] = e.node->output_dtype(e.index);
    const Shape& shape = e.node->output_shape(e.index);
    if (!shape.unknown_rank()) stand_in.attrs["shape"] = shape;
    Add(device, std::move(stand_in));
  }
  b.feed_inputs[feed] = local;
  return local;
}

std::string Partitioner::RecvFor(const Node* src, int index, const std::string& dst) {
  auto key = std::make_tuple(src->id(), index, dst);
  auto it = recvs_.find(key);
  if (it != recvs_.end()) return it->second;
  const std::string& from = device_of_[src->id()];
  const bool control = index == kControlSlot;
  const std::string base =
      src->name() + (control ? std::string("_ctrl") : "_" + std::to_string(index));
  const std::string suffix = "/to_" + SanitizeDevice(dst);
  const std::string tensor_name =
      control ? "^" + src->name() : src->name() + ":" + std::to_string(index);

  std::string sent = src->name() + (index > 0 ? ":" + std::to_string(index) : "");
  DType dtype = control ? DType::kInt32 : src->output_dtype(index);
  Shape shape = control ? Shape{} : src->output_shape(index);
  if (control) {
    // A control edge carries a dummy int32 scalar produced once src has run.
    NodeDef token;
    token.name = NewName(from, "_ctrl/" + src->name() + suffix);
    token.op = "Const";
    token.inputs = {"^" + src->name()};
    token.attrs["value"] = Tensor::Scalar<int32_t>(0);
    sent = token.name;
    Add(from, std::move(token));
  }

  NodeDef send;
  send.name = NewName(from, "_send/" + base + suffix);
  send.op = "_Send";
  send.inputs = {sent};
  send.attrs["tensor_name"] = tensor_name;
  send.attrs["send_device"] = from;
  send.attrs["recv_device"] = dst;
  At(from).sends.push_back(send.name);
  Add(from, std::move(send));

  NodeDef recv;
  recv.name = NewName(dst, "_recv/" + base + suffix);
  recv.op = "_Recv";
  recv.attrs["tensor_name"] = tensor_name;
  recv.attrs["send_device"] = from;
  recv.attrs["recv_device"] = dst;
  recv.attrs["dtype"] = dtype;
  if (!shape.unknown_rank()) recv.attrs["shape"] = shape;
  std::string name = recv.name;
  Add(dst, std::move(recv));
  recvs_[key] = name;
  return name;
}

StatusOr<std::string> Partitioner::RefInput(const Node* consumer, int k,
                                            const std::string& device) {
  const Node* var = consumer->input(k).node;
  std::string var_device = InSet(var) ? device_of_[var->id()] : variable_copies_[var->id()];
  if (!var_device.empty() && var_device != device) {
    return InvalidArgument(consumer->Describe() + " on " + device + " takes variable " +
                           var->Describe() + " by reference, but that is on " + var_device +
                           ": a ref input must stay on its variable's device (colocate them)");
  }
  if (var_device.empty()) {
    // Not run in this step but reached by the consumer's kernel: copy it here.
    NodeDef copy = var->def();
    copy.inputs.clear();
    variable_copies_[var->id()] = device;
    Add(device, std::move(copy));
  }
  return consumer->input(k).ToString();
}

StatusOr<std::string> Partitioner::DataInput(const Node* consumer, int k,
                                             const std::string& device) {
  if (consumer->IsRefInput(k)) return RefInput(consumer, k, device);
  const Endpoint& e = consumer->input(k);
  for (size_t f = 0; f < feeds_.size(); ++f) {
    if (feeds_[f].node == e.node && feeds_[f].index == e.index) return FeedInput(f, device);
  }
  if (!InSet(e.node)) {
    return InvalidArgument(consumer->Describe() + " needs '" + e.ToString() +
                           "', which is neither fed nor computed in the step");
  }
  if (device_of_[e.node->id()] == device) return e.ToString();
  return RecvFor(e.node, e.index, device);
}

StatusOr<std::vector<DevicePartition>> Partitioner::Run(const std::vector<const Node*>& nodes,
                                                        const std::vector<Endpoint>& fetches,
                                                        const std::vector<const Node*>& targets) {
  std::vector<const Node*> order;
  for (const Node* n : nodes) {
    if (n == nullptr || n->id() < 0 || n->id() >= graph_.num_nodes() || graph_.node(n->id()) != n) {
      return InvalidArgument("Partition: a node in the set does not belong to the graph");
    }
    auto it = placement_.find(n->id());
    if (it == placement_.end() || it->second.device.empty()) {
      return InvalidArgument(n->Describe() + " has no placement");
    }
    if (device_of_[n->id()].empty()) order.push_back(n);
    device_of_[n->id()] = it->second.device;
  }
  // Graph order is topological: a producer's def precedes its consumers' and Sends.
  std::sort(order.begin(), order.end(),
            [](const Node* a, const Node* b) { return a->id() < b->id(); });

  for (const Node* n : order) {
    const std::string& device = device_of_[n->id()];
    NodeDef def = n->def();
    def.inputs.clear();
    for (int k = 0; k < n->num_inputs(); ++k) {
      AF_ASSIGN_OR_RETURN(std::string input, DataInput(n, k, device));
      def.inputs.push_back(std::move(input));
    }
    for (const Node* c : n->control_inputs()) {
      if (!InSet(c)) {
        return InvalidArgument(n->Describe() + " has a control input on " + c->Describe() +
                               ", which is not in the step");
      }
      def.inputs.push_back(
          "^" + (device_of_[c->id()] == device ? c->name() : RecvFor(c, kControlSlot, device)));
    }
    Add(device, std::move(def));
  }

  for (const Endpoint& e : fetches) {
    bool fed = false;
    for (const Endpoint& f : feeds_) fed = fed || (f.node == e.node && f.index == e.index);
    if (fed) continue;
    if (e.node == nullptr || !InSet(e.node)) {
      return InvalidArgument("fetch '" + e.ToString() + "' is not computed in the step");
    }
    At(device_of_[e.node->id()]).fetches.push_back(e.ToString());
  }
  for (const Node* t : targets) {
    if (t == nullptr || !InSet(t)) {
      return InvalidArgument("target '" + (t ? t->name() : std::string("<null>")) +
                             "' is not in the step");
    }
    std::vector<std::string>& list = At(device_of_[t->id()]).targets;
    if (std::find(list.begin(), list.end(), t->name()) == list.end()) list.push_back(t->name());
  }

  std::vector<DevicePartition> out;
  for (auto& [device, b] : builders_) {
    DevicePartition p;
    p.device = device;
    auto built = Graph::FromNodeDefs(b.defs);
    if (!built.ok()) return built.status().WithContext("partition for device " + device);
    p.graph = std::move(built).value();
    for (const auto& [feed, local] : b.feed_inputs) {
      p.feeds.push_back(feeds_[feed].ToString());
      p.feed_inputs.push_back(local);
    }
    p.fetches = std::move(b.fetches);
    p.targets = std::move(b.targets);
    p.targets.insert(p.targets.end(), b.sends.begin(), b.sends.end());
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<DevicePartition>> Partition(const Graph& graph,
                                                 const std::vector<const Node*>& nodes,
                                                 const std::map<int, Placement>& placement,
                                                 const std::vector<Endpoint>& feeds,
                                                 const std::vector<Endpoint>& fetches,
                                                 const std::vector<const Node*>& targets) {
  for (const Endpoint& f : feeds) {
    if (f.node == nullptr || f.index < 0 || f.index >= f.node->num_outputs()) {
      return InvalidArgument("Partition: feed '" + f.ToString() + "' names no output");
    }
  }
  return Partitioner(graph, placement, feeds).Run(nodes, fetches, targets);
}

}  // namespace actorflow
