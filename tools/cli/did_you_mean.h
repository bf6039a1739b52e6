// "Did you mean ...?": the names closest to a misspelt one (a subcommand, a flag, a
// node of a graph), so that an error can propose the likely intended name.
//
// Closeness is the edit distance (insertions, deletions, substitutions of one
// character and transpositions of two adjacent ones, each one edit: the optimal
// string alignment distance, since those are the typos people make); a name counts
// as near when at most a third of its characters differ (at least 1), or when one
// name of 3 or more characters contains the other (a "loss" typed for "loss/total"
// is near).
//
// Thread safety: the functions are pure and reentrant.
#ifndef ACTORFLOW_TOOLS_CLI_DID_YOU_MEAN_H_
#define ACTORFLOW_TOOLS_CLI_DID_YOU_MEAN_H_

#include <cstddef>
#include <string>
#include <vector>

namespace actorflow {
namespace cli {

// The edit distance between `a` and `b` as above (case-sensitive).
size_t EditDistance(const std::string& a, const std::string& b);

// Up to `max_names` of `candidates` near `given` (see above), the closest first
// (ties in the candidates' order); `given` itself is never proposed. Empty when
// none is near.
std::vector<std::string> NearestNames(const std::string& given,
                                      const std::vector<std::string>& candidates,
                                      size_t max_names = 3);

// " (did you mean 'a'?)" or " (did you mean 'a', 'b' or 'c'?)" for the names, each
// between `quote`s; "" for no names: ready to append to an error message.
std::string DidYouMean(const std::vector<std::string>& names, const std::string& quote = "'");

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_DID_YOU_MEAN_H_
