#include "actors/sim/stragglers.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/status_testing.h"

namespace actorflow {
namespace {

using ::testing::HasSubstr;
using Kind = StragglerSpec::Term::Kind;

StragglerSpec Spec(const std::string& text) {
  StatusOr<StragglerSpec> spec = ParseStragglerSpec(text);
  EXPECT_OK(spec);
  return spec.ok() ? *spec : StragglerSpec();
}

// Factors of worker 0's steps 0..n-1, sorted.
std::vector<double> SortedDraws(const StragglerSpec& spec, int n) {
  std::vector<double> draws;
  for (int step = 0; step < n; ++step) draws.push_back(StragglerFactor(spec, 7, 0, step));
  std::sort(draws.begin(), draws.end());
  return draws;
}

TEST(ParseStragglerSpecTest, ParsesEachForm) {
  ASSERT_OK_AND_ASSIGN(StragglerSpec none, ParseStragglerSpec("none"));
  EXPECT_TRUE(none.terms.empty());
  EXPECT_EQ(none.text, "none");

  ASSERT_OK_AND_ASSIGN(StragglerSpec lognormal, ParseStragglerSpec("lognormal:0.5"));
  ASSERT_EQ(lognormal.terms.size(), 1u);
  EXPECT_EQ(lognormal.terms[0].kind, Kind::kLognormal);
  EXPECT_DOUBLE_EQ(lognormal.terms[0].sigma, 0.5);

  ASSERT_OK_AND_ASSIGN(StragglerSpec pareto, ParseStragglerSpec("pareto:1.5"));
  ASSERT_EQ(pareto.terms.size(), 1u);
  EXPECT_EQ(pareto.terms[0].kind, Kind::kPareto);
  EXPECT_DOUBLE_EQ(pareto.terms[0].alpha, 1.5);
  EXPECT_DOUBLE_EQ(pareto.terms[0].probability, 1.0);

  ASSERT_OK_AND_ASSIGN(StragglerSpec rare, ParseStragglerSpec("pareto:1.2,p=0.1"));
  EXPECT_DOUBLE_EQ(rare.terms[0].alpha, 1.2);
  EXPECT_DOUBLE_EQ(rare.terms[0].probability, 0.1);

  ASSERT_OK_AND_ASSIGN(StragglerSpec slow, ParseStragglerSpec("slow:3=4,7=2.5", 8));
  ASSERT_EQ(slow.terms.size(), 1u);
  EXPECT_EQ(slow.terms[0].kind, Kind::kSlowWorkers);
  EXPECT_EQ(slow.terms[0].slow, (std::map<int, double>{{3, 4.0}, {7, 2.5}}));
}

TEST(ParseStragglerSpecTest, CombinesTermsWithPlusAndKeepsExponentsWhole) {
  ASSERT_OK_AND_ASSIGN(StragglerSpec spec,
                       ParseStragglerSpec("lognormal:1e+0 + pareto:2,p=0.5+slow:1=3"));
  ASSERT_EQ(spec.terms.size(), 3u);
  EXPECT_EQ(spec.terms[0].kind, Kind::kLognormal);
  EXPECT_DOUBLE_EQ(spec.terms[0].sigma, 1.0);
  EXPECT_EQ(spec.terms[1].kind, Kind::kPareto);
  EXPECT_DOUBLE_EQ(spec.terms[1].probability, 0.5);
  EXPECT_EQ(spec.terms[2].kind, Kind::kSlowWorkers);
  EXPECT_EQ(spec.text, "lognormal:1e+0 + pareto:2,p=0.5+slow:1=3");
}

TEST(ParseStragglerSpecTest, RejectsBadTermsNamingThem) {
  struct Case {
    std::string text;
    int num_workers;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", -1, "empty straggler spec"},
      {"lognormal:0.5+", -1, "\"lognormal:0.5+\" has an empty term"},
      {"+slow:1=2", -1, "\"+slow:1=2\" has an empty term"},
      {"pareto:", -1, "\"pareto:\": alpha \"\" is not a number"},
      {"gamma:2", -1, "\"gamma:2\": unknown kind \"gamma\""},
      {"lognormal", -1, "\"lognormal\": expected KIND:PARAMETERS"},
      {"lognormal:abc", -1, "\"lognormal:abc\": sigma \"abc\" is not a number"},
      {"lognormal:nan", -1, "\"lognormal:nan\": sigma \"nan\" is not a finite number"},
      {"pareto:inf", -1, "\"pareto:inf\": alpha \"inf\" is not a finite number"},
      {"lognormal:-0.1", -1, "\"lognormal:-0.1\": sigma must be >= 0"},
      {"pareto:0", -1, "\"pareto:0\": alpha must be > 0"},
      {"pareto:-1", -1, "\"pareto:-1\": alpha must be > 0"},
      {"pareto:1,p=1.5", -1, "\"pareto:1,p=1.5\": p must be in [0, 1]"},
      {"pareto:1,p=-0.1", -1, "\"pareto:1,p=-0.1\": p must be in [0, 1]"},
      {"pareto:1,q=0.5", -1, "\"pareto:1,q=0.5\": unknown option \"q=0.5\""},
      {"slow:2=0.5", -1, "\"slow:2=0.5\": factor for worker 2 must be >= 1"},
      {"slow:-1=2", -1, "\"slow:-1=2\": worker index -1 is negative"},
      {"slow:1=2,1=3", -1, "\"slow:1=2,1=3\": worker 1 is repeated"},
      {"slow:4=2", 4, "\"slow:4=2\": worker index 4 is out of range: the cluster has 4 workers"},
      {"slow:x=2", -1, "\"slow:x=2\": worker index \"x\" is not a non-negative integer"},
      {"slow:1", -1, "\"slow:1\": expected WORKER=FACTOR"},
      {"lognormal:0.5+pareto:0", -1, "\"pareto:0\": alpha must be > 0"},
  };
  for (const Case& c : cases) {
    StatusOr<StragglerSpec> spec = ParseStragglerSpec(c.text, c.num_workers);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_THAT(spec.status().message(), HasSubstr(c.expected)) << c.text;
  }
}

TEST(StragglerFactorTest, IsAPureFunctionOfSeedWorkerAndStep) {
  const StragglerSpec spec = Spec("lognormal:0.5+pareto:1.5");
  // The same inputs in a different order give the same factors.
  const double first = StragglerFactor(spec, 11, 2, 5);
  StragglerFactor(spec, 11, 0, 0);
  StragglerFactor(spec, 11, 2, 6);
  EXPECT_EQ(StragglerFactor(spec, 11, 2, 5), first);
  EXPECT_EQ(StragglerFactor(Spec("lognormal:0.5+pareto:1.5"), 11, 2, 5), first);

  std::set<double> by_step, by_worker, by_seed;
  for (int i = 0; i < 100; ++i) {
    by_step.insert(StragglerFactor(spec, 11, 2, i));
    by_worker.insert(StragglerFactor(spec, 11, i, 5));
    by_seed.insert(StragglerFactor(spec, i, 2, 5));
  }
  EXPECT_GE(by_step.size(), 95u);
  EXPECT_GE(by_worker.size(), 95u);
  EXPECT_GE(by_seed.size(), 95u);
}

TEST(StragglerFactorTest, NoTermsMeansNoStragglers) {
  const StragglerSpec none = Spec("none");
  for (int step = 0; step < 100; ++step) EXPECT_EQ(StragglerFactor(none, 3, 1, step), 1.0);
}

TEST(StragglerFactorTest, ParetoTailMatchesTheDistribution) {
  const int n = 20000;
  const std::vector<double> draws = SortedDraws(Spec("pareto:1.5"), n);
  EXPECT_GE(draws.front(), 1.0);
  const double median = draws[n / 2];
  EXPECT_NEAR(median, std::pow(2.0, 1 / 1.5), 0.05 * std::pow(2.0, 1 / 1.5));
  const double above_10 =
      static_cast<double>(draws.end() - std::upper_bound(draws.begin(), draws.end(), 10.0)) / n;
  const double expected = std::pow(10.0, -1.5);
  EXPECT_NEAR(above_10, expected, 0.2 * expected);
}

TEST(StragglerFactorTest, ParetoWithProbabilityZeroNeverSlowsAndPartialIsMixed) {
  for (double f : SortedDraws(Spec("pareto:0.5,p=0"), 2000)) EXPECT_EQ(f, 1.0);
  const std::vector<double> rare = SortedDraws(Spec("pareto:1.5,p=0.1"), 20000);
  const double slowed =
      static_cast<double>(rare.end() - std::upper_bound(rare.begin(), rare.end(), 1.0)) / rare.size();
  EXPECT_NEAR(slowed, 0.1, 0.02);
}

TEST(StragglerFactorTest, LognormalHasMedianOneAndStaysPositive) {
  const int n = 20000;
  const std::vector<double> draws = SortedDraws(Spec("lognormal:0.5"), n);
  EXPECT_NEAR(draws[n / 2], 1.0, 0.05);
  EXPECT_GT(draws.front(), 0.0);
  EXPECT_LT(draws.front(), 1.0);  // some steps run faster than the base
  // About 84% of draws are below exp(sigma) (z < 1).
  const double below = static_cast<double>(std::lower_bound(draws.begin(), draws.end(),
                                                            std::exp(0.5)) - draws.begin()) / n;
  EXPECT_NEAR(below, 0.8413, 0.02);
}

TEST(StragglerFactorTest, SlowWorkersHaveTheirExactFactor) {
  const StragglerSpec spec = Spec("slow:3=4,7=2.5");
  for (int step = 0; step < 50; ++step) {
    EXPECT_EQ(StragglerFactor(spec, 1, 3, step), 4.0);
    EXPECT_EQ(StragglerFactor(spec, 1, 7, step), 2.5);
    EXPECT_EQ(StragglerFactor(spec, 1, 0, step), 1.0);
  }
  // Terms multiply: a slow worker with a rare pareto term is never below its factor.
  const StragglerSpec combined = Spec("slow:3=4+pareto:2,p=0.5");
  bool exceeded = false;
  for (int step = 0; step < 50; ++step) {
    const double f = StragglerFactor(combined, 1, 3, step);
    EXPECT_GE(f, 4.0);
    exceeded = exceeded || f > 4.0;
  }
  EXPECT_TRUE(exceeded);
}

TEST(StragglerFactorTest, ExtremeParametersStayFiniteAndBounded) {
  for (const char* text : {"pareto:0.001", "lognormal:1000", "slow:0=1e300+slow:0=1e300"}) {
    for (int step = 0; step < 200; ++step) {
      const double f = StragglerFactor(Spec(text), 5, 0, step);
      EXPECT_TRUE(std::isfinite(f)) << text;
      EXPECT_GE(f, kMinStragglerFactor) << text;
      EXPECT_LE(f, kMaxStragglerFactor) << text;
    }
  }
}

TEST(StragglerFactorTest, AScheduleSlowsExactlyTheNamedSteps) {
  auto spec = ParseStragglerSpec("at:3@17=50,1@0=2", 4);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_DOUBLE_EQ(StragglerFactor(*spec, 9, 3, 17), 50);
  EXPECT_DOUBLE_EQ(StragglerFactor(*spec, 9, 1, 0), 2);
  EXPECT_DOUBLE_EQ(StragglerFactor(*spec, 9, 3, 16), 1);
  EXPECT_DOUBLE_EQ(StragglerFactor(*spec, 9, 2, 17), 1);
  for (const char* bad : {"at:3=50", "at:3@x=2", "at:3@-1=2", "at:3@1.5=2", "at:3@1=0.5",
                          "at:9@1=2", "at:1@2=3,1@2=4"}) {
    EXPECT_FALSE(ParseStragglerSpec(bad, 4).ok()) << bad;
  }
}

}  // namespace
}  // namespace actorflow
