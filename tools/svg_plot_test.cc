#include "tools/svg_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <vector>

namespace actorflow {
namespace cli {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

::testing::Matcher<double> Near(double value) { return DoubleNear(value, 1e-12); }

int Count(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// A small XML well-formedness check: the prolog, then elements that nest and close
// in order, quoted attributes, and no bare '<' or '&' in text or attribute values.
// Returns "" when well formed, else what is wrong and where.
std::string XmlProblem(const std::string& xml) {
  size_t at = 0;
  if (xml.rfind("<?xml", 0) == 0) at = xml.find("?>") + 2;
  std::vector<std::string> open;
  bool root_seen = false;
  auto bad_entity = [&](size_t amp) {
    static const std::regex kEntity("^&(amp|lt|gt|quot|apos|#[0-9]+);");
    return !std::regex_search(xml.begin() + static_cast<long>(amp), xml.end(), kEntity);
  };
  while (at < xml.size()) {
    if (xml[at] != '<') {
      if (xml[at] == '&' && bad_entity(at)) return "bad entity at " + std::to_string(at);
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[at]))) {
        return "text outside the root at " + std::to_string(at);
      }
      ++at;
      continue;
    }
    const size_t end = xml.find('>', at);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(at);
    std::string tag = xml.substr(at + 1, end - at - 1);
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else {
      const bool self_closing = !tag.empty() && tag.back() == '/';
      if (self_closing) tag.pop_back();
      static const std::regex kTag(R"(^([A-Za-z][\w:-]*)(\s+[\w:-]+="[^"<]*")*\s*$)");
      if (!std::regex_match(tag, kTag)) return "malformed tag <" + tag + ">";
      for (size_t amp = tag.find('&'); amp != std::string::npos; amp = tag.find('&', amp + 1)) {
        if (bad_entity(at + 1 + amp)) return "bad entity in <" + tag + ">";
      }
      if (open.empty() && root_seen) return "second root element";
      root_seen = true;
      if (!self_closing) open.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
    }
    at = end + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return root_seen ? "" : "no root element";
}

PlotSeries Series(const std::string& name, std::vector<std::pair<double, double>> points) {
  return PlotSeries{name, std::move(points)};
}

PlotFigure TrainingFigure() {
  PlotFigure figure;
  figure.title = "logdir: /tmp/L";
  PlotPanel loss{"loss",
                 "step",
                 "loss",
                 true,
                 {Series("worker_0", {{4, 1.1}, {8, 0.7}, {12, 0.5}}),
                  Series("worker_1", {{4, 1.2}, {8, 0.8}, {12, 0.45}})}};
  PlotPanel accuracy{"accuracy",
                     "step",
                     "accuracy",
                     true,
                     {Series("worker_0", {{12, 0.9}}), Series("worker_1", {{12, 0.93}})}};
  figure.panels = {loss, accuracy};
  return figure;
}

TEST(NiceTicksTest, PicksOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_THAT(NiceTicks(0, 1, 7), ElementsAre(0, Near(0.2), Near(0.4), Near(0.6), Near(0.8), 1));
  const std::vector<double> ticks = NiceTicks(0.37, 2.9, 7);
  EXPECT_EQ(ticks.front(), 0);
  EXPECT_EQ(ticks.back(), 3);
  EXPECT_EQ(ticks.size(), 7u);  // step 0.5
  EXPECT_THAT(NiceTicks(1, 40, 8, /*integer=*/true), ElementsAre(0, 10, 20, 30, 40));
}

TEST(NiceTicksTest, IntegerTicksNeverStepBelowOne) {
  const std::vector<double> ticks = NiceTicks(3, 5, 8, /*integer=*/true);
  ASSERT_GE(ticks.size(), 2u);
  EXPECT_EQ(ticks[1] - ticks[0], 1);
}

TEST(NiceTicksTest, ASingleValueGetsARangeAroundIt) {
  for (double value : {0.0, 40.0, -3.5, 1e-3}) {
    const std::vector<double> ticks = NiceTicks(value, value, 7);
    ASSERT_GE(ticks.size(), 2u) << value;
    EXPECT_LT(ticks.front(), value);
    EXPECT_GT(ticks.back(), value);
  }
}

TEST(NiceTicksTest, CoverTheRangeWithAtMostMaxTicksOfANiceStep) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> exponent(-6, 6), unit(-1, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const double scale = std::pow(10.0, exponent(random));
    double low = unit(random) * scale, high = unit(random) * scale;
    if (low > high) std::swap(low, high);
    const int max_ticks = 2 + trial % 9;
    const std::vector<double> ticks = NiceTicks(low, high, max_ticks);
    ASSERT_GE(ticks.size(), 2u);
    ASSERT_LE(static_cast<int>(ticks.size()), max_ticks) << low << " " << high;
    const double step = ticks[1] - ticks[0];
    EXPECT_LE(ticks.front(), low + step * 1e-6);
    EXPECT_GE(ticks.back(), high - step * 1e-6);
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << "step " << step << " for " << low << ".." << high;
  }
}

TEST(FormatTickTest, UsesTheDecimalsTheStepNeeds) {
  EXPECT_EQ(FormatTick(0.4, 0.2), "0.4");
  EXPECT_EQ(FormatTick(0.05, 0.05), "0.05");
  EXPECT_EQ(FormatTick(1500, 500), "1500");
  EXPECT_EQ(FormatTick(-0.4, 0.2), "-0.4");
  EXPECT_EQ(FormatTick(-1e-17, 0.2), "0.0");
  EXPECT_EQ(FormatTick(2e6, 1e6), "2e+06");
}

TEST(SvgPlotTest, IsWellFormedXml) {
  const std::string svg = RenderSvgFigure(TrainingFigure());
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  // The checker itself rejects what it must.
  EXPECT_NE(XmlProblem("<svg><g></svg>"), "");
  EXPECT_NE(XmlProblem("<svg><text>a & b</text></svg>"), "");
  EXPECT_NE(XmlProblem("<svg x=1/>"), "");
}

TEST(SvgPlotTest, DrawsOnePolylinePerMultiPointSeriesAndMarkersForSinglePoints) {
  const std::string svg = RenderSvgFigure(TrainingFigure());
  EXPECT_EQ(Count(svg, "<polyline"), 2);
  EXPECT_EQ(Count(svg, "<polyline data-series=\"worker_0\""), 1);
  EXPECT_EQ(Count(svg, "<polyline data-series=\"worker_1\""), 1);
  EXPECT_EQ(Count(svg, "<circle class=\"marker\""), 2);
  EXPECT_EQ(Count(svg, "<g class=\"panel\""), 2);
  // Three points each: three coordinate pairs.
  const std::regex polyline("<polyline data-series=\"worker_0\" points=\"([^\"]*)\"");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(svg, match, polyline));
  EXPECT_EQ(Count(match[1].str(), ","), 3);
}

TEST(SvgPlotTest, HasTitlesLegendAndTickLabels) {
  const std::string svg = RenderSvgFigure(TrainingFigure());
  EXPECT_THAT(svg, HasSubstr(">logdir: /tmp/L</text>"));
  EXPECT_THAT(svg, HasSubstr("font-weight=\"bold\">loss</text>"));
  EXPECT_THAT(svg, HasSubstr("font-weight=\"bold\">accuracy</text>"));
  EXPECT_EQ(Count(svg, "<text class=\"legend\""), 4);  // two runs in each panel
  EXPECT_EQ(Count(svg, "font-size=\"12\">worker_0</text>"), 2);
  EXPECT_EQ(Count(svg, "font-size=\"12\">worker_1</text>"), 2);
  EXPECT_EQ(Count(svg, "font-size=\"13\">step</text>"), 2);  // x axis titles
  EXPECT_THAT(svg, HasSubstr("rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">loss<"));
  // Loss spans 0.45..1.2: ticks 0.4..1.2 by 0.2; steps 4..12 by 2.
  for (const char* tick : {">0.4<", ">0.6<", ">0.8<", ">1.0<", ">1.2<", ">4<", ">8<", ">12<"}) {
    EXPECT_THAT(svg, HasSubstr("font-size=\"11\"" + std::string(tick))) << tick;
  }
}

TEST(SvgPlotTest, ARunKeepsItsColourInEveryPanel) {
  const std::string svg = RenderSvgFigure(TrainingFigure());
  const std::regex stroke("<polyline data-series=\"worker_1\"[^>]*stroke=\"(#[0-9a-f]{6})\"");
  const std::regex fill(
      "<circle class=\"marker\" data-series=\"worker_1\"[^>]*fill=\"(#[0-9a-f]{6})\"");
  std::smatch line, marker;
  ASSERT_TRUE(std::regex_search(svg, line, stroke));
  ASSERT_TRUE(std::regex_search(svg, marker, fill));
  EXPECT_EQ(line[1].str(), marker[1].str());
  const std::regex other("<polyline data-series=\"worker_0\"[^>]*stroke=\"(#[0-9a-f]{6})\"");
  std::smatch first;
  ASSERT_TRUE(std::regex_search(svg, first, other));
  EXPECT_NE(first[1].str(), line[1].str());
}

TEST(SvgPlotTest, EscapesNamesAndSkipsNonFinitePoints) {
  PlotFigure figure;
  figure.panels = {PlotPanel{
      "a<b & c", "step", "y", true, {Series("run \"x\" & <y>", {{1, 1}, {2, NAN}, {3, 2}})}}};
  const std::string svg = RenderSvgFigure(figure);
  EXPECT_EQ(XmlProblem(svg), "") << svg;
  EXPECT_THAT(svg, HasSubstr("a&lt;b &amp; c"));
  EXPECT_THAT(svg, HasSubstr("run &quot;x&quot; &amp; &lt;y&gt;"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  const std::regex polyline("points=\"([^\"]*)\"");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(svg, match, polyline));
  EXPECT_EQ(Count(match[1].str(), ","), 2);
}

TEST(SvgPlotTest, CoincidingMarkersAreRingsWithOneValueLabel) {
  PlotFigure figure;
  figure.panels = {
      PlotPanel{"accuracy",
                "step",
                "accuracy",
                true,
                {Series("worker_0", {{22, 0.6667}}), Series("worker_1", {{22, 0.6667}}),
                 Series("worker_2", {{22, 0.9}})}}};
  const std::string svg = RenderSvgFigure(figure);
  EXPECT_EQ(XmlProblem(svg), "");
  const std::regex marker(
      "<circle class=\"marker\" data-series=\"(worker_[0-9])\"[^>]* r=\"([0-9.]+)\"");
  std::vector<double> radii;
  for (std::sregex_iterator it(svg.begin(), svg.end(), marker), end; it != end; ++it) {
    radii.push_back(std::stod((*it)[2].str()));
  }
  ASSERT_EQ(radii.size(), 3u);
  EXPECT_GT(radii[0], radii[1]);
  EXPECT_GT(radii[1], radii[2]);
  EXPECT_EQ(Count(svg, ">0.6667</text>"), 1);
  EXPECT_EQ(Count(svg, ">0.9</text>"), 1);
}

TEST(SvgPlotTest, APanelWithoutFiniteValuesSaysSo) {
  PlotFigure figure;
  figure.panels = {PlotPanel{"loss", "step", "loss", true, {Series("w", {{1, INFINITY}})}}};
  const std::string svg = RenderSvgFigure(figure);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_THAT(svg, HasSubstr("no finite values"));
  EXPECT_EQ(Count(svg, "<polyline"), 0);
}

}  // namespace
}  // namespace cli
}  // namespace actorflow
