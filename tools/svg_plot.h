// Line charts as a standalone SVG document, written as plain strings (no library):
// what `actorflow plot` draws from a log directory's scalars.
//
// A figure is a grid of panels (two columns). Each panel has a title, axes whose
// ticks are "nice" numbers (1, 2 or 5 times a power of ten) with their labels, axis
// titles, light grid lines, a legend naming its series, and one <polyline> per series
// with two or more points (a series with a single point, such as an accuracy logged
// once at the end, is a circle marker labelled with its value instead; markers that
// coincide shrink one after the other, so each shows as a ring, and their value is
// printed once). A series keeps its colour in every
// panel: colours follow the order in which series names first appear in the figure.
// Points with a non-finite x or y are left out.
//
// Thread safety: pure functions.
#ifndef ACTORFLOW_TOOLS_SVG_PLOT_H_
#define ACTORFLOW_TOOLS_SVG_PLOT_H_

#include <string>
#include <utility>
#include <vector>

namespace actorflow {
namespace cli {

struct PlotSeries {
  std::string name;                               // the legend entry, e.g. "worker_0"
  std::vector<std::pair<double, double>> points;  // (x, y); drawn in order of x
};

struct PlotPanel {
  std::string title;
  std::string x_title;
  std::string y_title;
  // Whether x ticks must be integers (steps): never a tick step below 1.
  bool integer_x = true;
  std::vector<PlotSeries> series;
};

struct PlotFigure {
  std::string title;  // above every panel; empty = none
  std::vector<PlotPanel> panels;
};

// Tick positions covering [low, high]: a step of 1, 2 or 5 times a power of ten
// chosen so that there are at most `max_ticks` ticks, the first tick <= low and the
// last >= high. low == high gets a range around the value. `integer` forces a step
// of at least 1. Precondition: low <= high, both finite, max_ticks >= 2.
std::vector<double> NiceTicks(double low, double high, int max_ticks, bool integer = false);

// A tick label: as many decimals as `step` needs ("0.25", "1500", "-0.4", never
// "-0"); scientific notation for magnitudes of 1e6 and more or below 1e-4.
std::string FormatTick(double value, double step);

// The figure as an SVG document (starts with "<?xml", ends with "</svg>\n").
std::string RenderSvgFigure(const PlotFigure& figure);

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_SVG_PLOT_H_
