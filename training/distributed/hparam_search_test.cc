#include "training/distributed/hparam_search.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>

namespace actorflow {
namespace {

TEST(HparamSearchTest, GridOfTwoParametersWithTwoValuesIsFourConfigurations) {
  auto params = ParseGrid("lr=0.01|0.1;hidden=10,10|32");
  ASSERT_TRUE(params.ok()) << params.status();
  ASSERT_EQ(params->size(), 2u);
  EXPECT_EQ((*params)[1].values, (std::vector<std::string>{"10,10", "32"}));
  std::vector<GridConfig> configs = ExpandGrid(*params);
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(ConfigString(configs[0]), "lr=0.01 hidden=10,10");
  EXPECT_EQ(ConfigString(configs[1]), "lr=0.01 hidden=32");
  EXPECT_EQ(ConfigString(configs[3]), "lr=0.1 hidden=32");
}

TEST(HparamSearchTest, SpacesAndATrailingSeparatorAreAccepted) {
  auto params = ParseGrid(" lr = 0.1 | 0.2 ; ");
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ((*params)[0].name, "lr");
  EXPECT_EQ((*params)[0].values, (std::vector<std::string>{"0.1", "0.2"}));
}

TEST(HparamSearchTest, GridsThatDoNotParseSayWhy) {
  struct Case {
    std::string grid, expected;
  };
  for (const Case& c : std::vector<Case>{{"", "empty"},
                                         {"lr", "no '='"},
                                         {"=0.1", "no name"},
                                         {"lr=0.1||0.2", "empty value"},
                                         {"lr=0.1;lr=0.2", "given twice"},
                                         {";;", "no parameter"}}) {
    auto params = ParseGrid(c.grid);
    EXPECT_EQ(params.status().code(), Code::kInvalidArgument) << c.grid;
    EXPECT_NE(params.status().message().find(c.expected), std::string::npos)
        << c.grid << ": " << params.status();
  }
}

TEST(HparamSearchTest, EveryConfigurationRunsOnceAndFreeSlotsShareTheWork) {
  auto configs = ExpandGrid(*ParseGrid("a=1|2|3|4;b=x|y"));
  std::mutex mu;
  std::condition_variable cv;
  std::set<int> first_slots;  // slots that started one of the first two trials
  bool overlapped = false;
  auto results = RunGridSearch(configs, 2, [&](size_t index, const GridConfig& c, int slot)
                                               -> StatusOr<double> {
    {
      // The first two trials wait for each other: both slots run at once.
      std::unique_lock<std::mutex> lock(mu);
      if (index < 2) {
        first_slots.insert(slot);
        cv.notify_all();
        overlapped = cv.wait_for(lock, std::chrono::seconds(10),
                                 [&] { return first_slots.size() == 2; }) || overlapped;
      }
    }
    if (c[0].second == "3") return Internal("trial failed");
    return static_cast<double>(index) / 10;
  });
  ASSERT_EQ(results.size(), 8u);
  EXPECT_TRUE(overlapped);
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].params, configs[i]);
    EXPECT_TRUE(results[i].slot == 0 || results[i].slot == 1);
  }
  EXPECT_FALSE(results[4].status.ok());
  EXPECT_EQ(BestResult(results), 7);
}

}  // namespace
}  // namespace actorflow
