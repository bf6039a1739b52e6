// The nearest names an error proposes for a misspelt subcommand, flag or node.
#include "tools/cli/did_you_mean.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace actorflow {
namespace cli {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsSubstitutionsAndTranspositions) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("epoch", "epochs"), 1u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("trian", "train"), 1u);  // a transposition is one edit
  EXPECT_EQ(EditDistance("ca", "abc"), 3u);       // no edit of a transposed pair
  EXPECT_EQ(EditDistance("Loss", "loss"), 1u);     // case counts
}

TEST(NearestNamesTest, ProposesTheClosestNamesFirst) {
  const std::vector<std::string> flags = {"--steps", "--epochs", "--seed", "--help"};
  EXPECT_EQ(NearestNames("--epoch", flags), (std::vector<std::string>{"--epochs"}));
  EXPECT_EQ(NearestNames("--step", flags), (std::vector<std::string>{"--steps", "--seed"}));
  EXPECT_EQ(NearestNames("--stpes", flags), (std::vector<std::string>{"--steps"}));
  EXPECT_EQ(NearestNames("--step", flags, 1), (std::vector<std::string>{"--steps"}));
}

TEST(NearestNamesTest, FarNamesAndTheNameItselfAreNotProposed) {
  const std::vector<std::string> nodes = {"loss", "weights", "x", "loss/total"};
  EXPECT_TRUE(NearestNames("optimizer", nodes).empty());
  EXPECT_TRUE(NearestNames("x", {"x"}).empty());
  // A name that contains the given one is near, however long.
  EXPECT_EQ(NearestNames("los", nodes), (std::vector<std::string>{"loss", "loss/total"}));
  // ... but not for one- and two-letter names, which are in everything.
  EXPECT_EQ(NearestNames("w", nodes), (std::vector<std::string>{"x"}));
}

TEST(DidYouMeanTest, ListsTheNamesReadyToAppend) {
  EXPECT_EQ(DidYouMean({}), "");
  EXPECT_EQ(DidYouMean({"train"}), " (did you mean 'train'?)");
  EXPECT_EQ(DidYouMean({"a", "b", "c"}), " (did you mean 'a', 'b' or 'c'?)");
  EXPECT_EQ(DidYouMean({"--epochs"}, ""), " (did you mean --epochs?)");
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
