#include "tools/cli/did_you_mean.h"

#include <algorithm>
#include <utility>

namespace actorflow {
namespace cli {

size_t EditDistance(const std::string& a, const std::string& b) {
  // Three rows of the dynamic-programming table: row[j] is the distance between a's
  // first i characters and b's first j; previous and before_previous hold i-1 and
  // i-2 (the latter for transpositions).
  std::vector<size_t> before_previous(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    before_previous.swap(previous);
    previous.swap(row);
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before_previous[j - 2] + 1);
      }
    }
  }
  return row[b.size()];
}

std::vector<std::string> NearestNames(const std::string& given,
                                      const std::vector<std::string>& candidates,
                                      size_t max_names) {
  const size_t limit = std::max<size_t>(1, given.size() / 3);
  std::vector<std::pair<size_t, size_t>> near;  // (distance, index in candidates)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& name = candidates[i];
    if (name == given || name.empty() || given.empty()) continue;
    const size_t distance = EditDistance(given, name);
    // Containment only for names long enough to say something ("a" is in everything).
    const bool contains = std::min(given.size(), name.size()) >= 3 &&
                          (name.find(given) != std::string::npos ||
                           given.find(name) != std::string::npos);
    if (distance <= limit || contains) near.emplace_back(distance, i);
  }
  std::stable_sort(near.begin(), near.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> names;
  for (size_t k = 0; k < near.size() && names.size() < max_names; ++k) {
    const std::string& name = candidates[near[k].second];
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::string DidYouMean(const std::vector<std::string>& names, const std::string& quote) {
  if (names.empty()) return "";
  std::string text = " (did you mean ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " or " : ", ";
    text += quote + names[i] + quote;
  }
  return text + "?)";
}

}  // namespace cli
}  // namespace actorflow
