#include "tools/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace actorflow {
namespace cli {
namespace {

// Tableau 10: distinct, colour-blind-friendlier than the primaries, print well.
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int kNumColours = sizeof(kColours) / sizeof(kColours[0]);

// Panel geometry, in SVG user units (pixels).
constexpr int kColumns = 2;
constexpr double kPanelWidth = 560;
constexpr double kPanelHeight = 360;
constexpr double kFigureTitleHeight = 36;
constexpr double kPlotLeft = 78;  // room for the y tick labels and the y title
constexpr double kPlotRight = 24;
constexpr double kPlotBottom = 54;  // room for the x tick labels and the x title
constexpr double kTitleY = 24;
constexpr double kLegendY = 46;
constexpr double kLegendRowHeight = 16;
constexpr double kCharWidth = 7.0;  // of the 12 px legend font, on average
constexpr int kMaxTicksX = 8;
constexpr int kMaxTicksY = 7;
constexpr double kMargin = 0.04;  // of the data's range, on each side

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

// A linear map from data to pixels.
struct Axis {
  double data_low, data_high, pixel_low, pixel_high;
  double operator()(double v) const {
    return pixel_low + (v - data_low) / (data_high - data_low) * (pixel_high - pixel_low);
  }
};

// The finite points of a series, sorted by x.
std::vector<std::pair<double, double>> FinitePoints(const PlotSeries& series) {
  std::vector<std::pair<double, double>> points;
  for (const auto& p : series.points) {
    if (std::isfinite(p.first) && std::isfinite(p.second)) points.push_back(p);
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return points;
}

struct LegendEntry {
  std::string name;
  std::string colour;
  bool marker;  // a single-point series: a dot, not a line
};

// The legend: one row of (swatch, name) entries, wrapped to the panel's width.
// Returns the y below it.
double RenderLegend(const std::vector<LegendEntry>& entries, double width, std::string* svg) {
  double x = kPlotLeft, y = kLegendY;
  for (const LegendEntry& entry : entries) {
    const std::string& name = entry.name;
    const std::string& colour = entry.colour;
    const double entry_width = 26 + kCharWidth * static_cast<double>(name.size()) + 18;
    if (x > kPlotLeft && x + entry_width > width - kPlotRight) {
      x = kPlotLeft;
      y += kLegendRowHeight;
    }
    if (entry.marker) {
      *svg += "<circle cx=\"" + Num(x + 10) + "\" cy=\"" + Num(y - 4) + "\" r=\"4.5\" fill=\"" +
              colour + "\"/>\n";
    } else {
      *svg += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(y - 4) + "\" x2=\"" + Num(x + 20) +
              "\" y2=\"" + Num(y - 4) + "\" stroke=\"" + colour + "\" stroke-width=\"3\"/>\n";
    }
    *svg += "<text class=\"legend\" x=\"" + Num(x + 26) + "\" y=\"" + Num(y) +
            "\" font-size=\"12\">" + Escape(name) + "</text>\n";
    x += entry_width;
  }
  return y + 12;
}

void RenderPanel(const PlotPanel& panel, const std::vector<std::string>& names, std::string* svg) {
  auto colour_of = [&](const std::string& name) {
    const auto at = std::find(names.begin(), names.end(), name) - names.begin();
    return kColours[at % kNumColours];
  };
  *svg += "<text x=\"" + Num(kPanelWidth / 2) + "\" y=\"" + Num(kTitleY) +
          "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">" + Escape(panel.title) +
          "</text>\n";

  std::vector<LegendEntry> legend;
  std::vector<std::vector<std::pair<double, double>>> points;
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  double y_low = x_low, y_high = -x_low;
  for (const PlotSeries& series : panel.series) {
    points.push_back(FinitePoints(series));
    legend.push_back(LegendEntry{series.name, colour_of(series.name), points.back().size() == 1});
    for (const auto& [x, y] : points.back()) {
      x_low = std::min(x_low, x);
      x_high = std::max(x_high, x);
      y_low = std::min(y_low, y);
      y_high = std::max(y_high, y);
    }
  }
  const double plot_top = RenderLegend(legend, kPanelWidth, svg) + 8;
  const double plot_left = kPlotLeft, plot_right = kPanelWidth - kPlotRight;
  const double plot_bottom = kPanelHeight - kPlotBottom;
  *svg += "<rect x=\"" + Num(plot_left) + "\" y=\"" + Num(plot_top) + "\" width=\"" +
          Num(plot_right - plot_left) + "\" height=\"" + Num(plot_bottom - plot_top) +
          "\" fill=\"none\" stroke=\"#444444\"/>\n";
  // Axis titles.
  *svg += "<text x=\"" + Num((plot_left + plot_right) / 2) + "\" y=\"" + Num(kPanelHeight - 12) +
          "\" text-anchor=\"middle\" font-size=\"13\">" + Escape(panel.x_title) + "</text>\n";
  *svg += "<text transform=\"translate(18," + Num((plot_top + plot_bottom) / 2) +
          ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">" + Escape(panel.y_title) +
          "</text>\n";
  if (!std::isfinite(x_low)) {
    *svg += "<text x=\"" + Num((plot_left + plot_right) / 2) + "\" y=\"" +
            Num((plot_top + plot_bottom) / 2) +
            "\" text-anchor=\"middle\" font-size=\"13\" fill=\"#888888\">no finite values</text>\n";
    return;
  }

  // A margin, so that no point sits on the frame; kept at 0 for data that is >= 0.
  auto pad = [](double* low, double* high) {
    const double margin = (*high - *low) * kMargin;
    const bool non_negative = *low >= 0;
    *low -= margin;
    *high += margin;
    if (non_negative && *low < 0) *low = 0;
  };
  pad(&x_low, &x_high);
  pad(&y_low, &y_high);
  const std::vector<double> x_ticks = NiceTicks(x_low, x_high, kMaxTicksX, panel.integer_x);
  const std::vector<double> y_ticks = NiceTicks(y_low, y_high, kMaxTicksY);
  const Axis x_axis{x_ticks.front(), x_ticks.back(), plot_left, plot_right};
  const Axis y_axis{y_ticks.front(), y_ticks.back(), plot_bottom, plot_top};
  const double x_step = x_ticks[1] - x_ticks[0], y_step = y_ticks[1] - y_ticks[0];
  for (double t : x_ticks) {
    const std::string x = Num(x_axis(t));
    *svg += "<line x1=\"" + x + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + x + "\" y2=\"" +
            Num(plot_bottom) + "\" stroke=\"#e4e4e4\"/>\n";
    *svg += "<line x1=\"" + x + "\" y1=\"" + Num(plot_bottom) + "\" x2=\"" + x + "\" y2=\"" +
            Num(plot_bottom + 5) + "\" stroke=\"#444444\"/>\n";
    *svg += "<text class=\"tick\" x=\"" + x + "\" y=\"" + Num(plot_bottom + 19) +
            "\" text-anchor=\"middle\" font-size=\"11\">" + FormatTick(t, x_step) + "</text>\n";
  }
  for (double t : y_ticks) {
    const std::string y = Num(y_axis(t));
    *svg += "<line x1=\"" + Num(plot_left) + "\" y1=\"" + y + "\" x2=\"" + Num(plot_right) +
            "\" y2=\"" + y + "\" stroke=\"#e4e4e4\"/>\n";
    *svg += "<line x1=\"" + Num(plot_left - 5) + "\" y1=\"" + y + "\" x2=\"" + Num(plot_left) +
            "\" y2=\"" + y + "\" stroke=\"#444444\"/>\n";
    *svg += "<text class=\"tick\" x=\"" + Num(plot_left - 8) + "\" y=\"" + Num(y_axis(t) + 4) +
            "\" text-anchor=\"end\" font-size=\"11\">" + FormatTick(t, y_step) + "</text>\n";
  }
  // Runs often end on the same value (accuracy): each later marker is smaller, so
  // coinciding markers show as rings, and a position's value is printed once.
  int markers_left = 0;
  for (const auto& p : points) markers_left += p.size() == 1 ? 1 : 0;
  std::vector<std::string> labelled;
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const std::string colour = colour_of(panel.series[s].name);
    const std::string name = Escape(panel.series[s].name);
    if (points[s].size() == 1) {
      const auto& [x, y] = points[s].front();
      const double radius = std::min(4.5 + 2.0 * --markers_left, 10.5);
      const std::string cx = Num(x_axis(x)), cy = Num(y_axis(y));
      *svg += "<circle class=\"marker\" data-series=\"" + name + "\" cx=\"" + cx + "\" cy=\"" + cy +
              "\" r=\"" + Num(radius) + "\" fill=\"" + colour +
              "\" stroke=\"white\" stroke-width=\"1\"/>\n";
      if (std::find(labelled.begin(), labelled.end(), cx + "," + cy) != labelled.end()) continue;
      labelled.push_back(cx + "," + cy);
      // A lone point is usually a final figure (accuracy): print its value.
      char value[32];
      std::snprintf(value, sizeof(value), "%.4g", y);
      *svg += "<text class=\"value\" x=\"" + Num(x_axis(x) + 10) + "\" y=\"" + Num(y_axis(y) - 7) +
              "\" font-size=\"11\" fill=\"" + colour + "\">" + value + "</text>\n";
    } else if (points[s].size() > 1) {
      std::string coordinates;
      for (const auto& [x, y] : points[s]) {
        if (!coordinates.empty()) coordinates += ' ';
        coordinates += Num(x_axis(x)) + "," + Num(y_axis(y));
      }
      *svg += "<polyline data-series=\"" + name + "\" points=\"" + coordinates +
              "\" fill=\"none\" stroke=\"" + colour +
              "\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n";
    }
  }
}

}  // namespace

std::vector<double> NiceTicks(double low, double high, int max_ticks, bool integer) {
  if (low == high) {
    double pad = low == 0 ? 1.0 : std::abs(low) * 0.1;
    if (integer) pad = std::ceil(pad);  // whole steps, so the value sits in the middle
    low -= pad;
    high += pad;
  }
  double raw = (high - low) / (max_ticks - 1);
  if (!(raw > 0) || !std::isfinite(raw)) raw = 1;  // a range too small or large to divide
  for (int exponent = static_cast<int>(std::floor(std::log10(raw)));; ++exponent) {
    for (double mantissa : {1.0, 2.0, 5.0}) {
      const double step = mantissa * std::pow(10.0, exponent);
      if (integer && step < 1) continue;
      const double first = std::floor(low / step + 1e-9);
      const double last = std::ceil(high / step - 1e-9);
      const int count = static_cast<int>(std::llround(last - first)) + 1;
      if (count > max_ticks) continue;
      std::vector<double> ticks;
      for (int i = 0; i < std::max(count, 2); ++i) {
        const double tick = (first + i) * step;
        ticks.push_back(std::abs(tick) < step * 1e-9 ? 0.0 : tick);
      }
      return ticks;
    }
  }
}

std::string FormatTick(double value, double step) {
  if (std::abs(value) < step * 1e-9) value = 0;
  char buffer[48];
  if (value != 0 && (std::abs(value) >= 1e6 || step < 1e-4)) {
    std::snprintf(buffer, sizeof(buffer), "%g", value);
  } else {
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  }
  return buffer;
}

std::string RenderSvgFigure(const PlotFigure& figure) {
  std::vector<std::string> names;  // colour order: first appearance
  for (const PlotPanel& panel : figure.panels) {
    for (const PlotSeries& series : panel.series) {
      if (std::find(names.begin(), names.end(), series.name) == names.end()) {
        names.push_back(series.name);
      }
    }
  }
  const int count = static_cast<int>(figure.panels.size());
  const int columns = std::max(1, std::min(kColumns, count));
  const int rows = (count + columns - 1) / columns;
  const double top = figure.title.empty() ? 0 : kFigureTitleHeight;
  const double width = columns * kPanelWidth;
  const double height = top + std::max(1, rows) * kPanelHeight;

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width) + "\" height=\"" +
         Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" fill=\"#222222\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!figure.title.empty()) {
    svg += "<text x=\"" + Num(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" +
           Escape(figure.title) + "</text>\n";
  }
  for (int i = 0; i < count; ++i) {
    const double x = (i % columns) * kPanelWidth;
    const double y = top + (i / columns) * kPanelHeight;
    svg += "<g class=\"panel\" transform=\"translate(" + Num(x) + "," + Num(y) + ")\">\n";
    RenderPanel(figure.panels[i], names, &svg);
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace cli
}  // namespace actorflow
