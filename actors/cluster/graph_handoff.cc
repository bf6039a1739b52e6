#include "actors/cluster/graph_handoff.h"

#include <map>
#include <mutex>
#include <random>
#include <set>

namespace actorflow {
namespace graph_handoff {
namespace {

struct Table {
  std::mutex mu;
  std::set<std::string> tasks;
  std::map<uint64_t, std::shared_ptr<const Graph>> left;
  std::mt19937_64 tickets{std::random_device{}()};
  uint64_t taken = 0;
};

Table& TheTable() {
  static Table* table = new Table;  // never destroyed: servers may stop at exit
  return *table;
}

}  // namespace

void AddTask(const std::string& endpoint) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  t.tasks.insert(endpoint);
}

void RemoveTask(const std::string& endpoint) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  t.tasks.erase(endpoint);
}

bool ServesTask(const std::string& endpoint) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.tasks.count(endpoint) > 0;
}

uint64_t Leave(const std::string& endpoint, std::shared_ptr<const Graph> graph) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (graph == nullptr || t.tasks.count(endpoint) == 0) return 0;
  uint64_t ticket = 0;
  while (ticket == 0 || t.left.count(ticket) > 0) ticket = t.tickets();
  t.left.emplace(ticket, std::move(graph));
  return ticket;
}

std::shared_ptr<const Graph> Take(uint64_t ticket) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.left.find(ticket);
  if (it == t.left.end()) return nullptr;
  std::shared_ptr<const Graph> graph = std::move(it->second);
  t.left.erase(it);
  ++t.taken;
  return graph;
}

size_t LeftCount() {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.left.size();
}

uint64_t TakenCount() {
  Table& t = TheTable();
  std::lock_guard<std::mutex> lock(t.mu);
  return t.taken;
}

}  // namespace graph_handoff
}  // namespace actorflow
