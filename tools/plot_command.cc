#include "tools/plot_command.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>

#include "tools/cli/did_you_mean.h"
#include "tools/svg_plot.h"
#include "training/summary/event_file_reader.h"

namespace actorflow {
namespace cli {
namespace {

// Tags shown first when --tags is not given: what a reader looks for first.
constexpr const char* kLeadingTags[] = {"loss", "accuracy"};

// "worker_2" before "worker_10": runs of digits compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i_end = i, j_end = j;
      while (i_end < a.size() && std::isdigit(static_cast<unsigned char>(a[i_end]))) ++i_end;
      while (j_end < b.size() && std::isdigit(static_cast<unsigned char>(b[j_end]))) ++j_end;
      // Compare without leading zeros: by length, then digit by digit.
      std::string x = a.substr(i, i_end - i), y = b.substr(j, j_end - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string JoinCommaSeparated(const std::vector<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : ", ") + item;
  return joined;
}

// Every tag some run logged: kLeadingTags first, then the others in name order.
std::vector<std::string> AvailableTags(const LogdirScalars& scalars) {
  std::set<std::string> found;
  for (const auto& [run, tags] : scalars.runs) {
    for (const auto& [tag, points] : tags) found.insert(tag);
  }
  std::vector<std::string> ordered;
  for (const char* tag : kLeadingTags) {
    if (found.erase(tag) > 0) ordered.push_back(tag);
  }
  ordered.insert(ordered.end(), found.begin(), found.end());
  return ordered;
}

StatusOr<std::vector<std::string>> ChosenTags(const PlotCommandOptions& options,
                                              const std::string& logdir,
                                              const LogdirScalars& scalars) {
  const std::vector<std::string> available = AvailableTags(scalars);
  if (available.empty()) {
    return NotFound("the event files in " + logdir + " hold no scalar summaries: nothing to plot");
  }
  if (options.tags.empty()) return available;
  for (const std::string& tag : options.tags) {
    if (std::find(available.begin(), available.end(), tag) != available.end()) continue;
    return NotFound("--tags: no run in " + logdir + " logged the scalar '" + tag + "'" +
                    DidYouMean(NearestNames(tag, available)) +
                    "; the tags there are: " + JoinCommaSeparated(available));
  }
  return options.tags;
}

PlotFigure MakeFigure(const std::string& title, const std::vector<std::string>& tags,
                      const LogdirScalars& scalars) {
  std::vector<std::string> runs;
  for (const auto& [run, unused] : scalars.runs) runs.push_back(run);
  std::sort(runs.begin(), runs.end(), NaturalLess);
  PlotFigure figure;
  figure.title = title;
  for (const std::string& tag : tags) {
    PlotPanel panel;
    panel.title = tag;
    panel.x_title = "step";
    panel.y_title = tag;
    for (const std::string& run : runs) {
      const auto& run_tags = scalars.runs.at(run);
      auto it = run_tags.find(tag);
      if (it == run_tags.end()) continue;
      PlotSeries series;
      series.name = run;
      for (const ScalarPoint& p : it->second) {
        series.points.emplace_back(static_cast<double>(p.step), p.value);
      }
      panel.series.push_back(std::move(series));
    }
    figure.panels.push_back(std::move(panel));
  }
  return figure;
}

Status Plot(const PlotCommandOptions& options, std::ostream& out, std::ostream& err) {
  const std::string logdir = ResolveUserPath(options.logdir);
  const std::string out_path = ResolveUserPath(options.out_path);
  AF_ASSIGN_OR_RETURN(LogdirScalars scalars, ReadLogdirScalars(logdir));
  for (const std::string& warning : scalars.warnings) err << "warning: " << warning << "\n";
  AF_ASSIGN_OR_RETURN(std::vector<std::string> tags, ChosenTags(options, logdir, scalars));
  const std::string svg = RenderSvgFigure(MakeFigure(options.logdir, tags, scalars));

  std::ofstream file(out_path, std::ios::binary | std::ios::trunc);
  if (file) file << svg;
  if (file) file.close();
  if (!file) {
    const int error = errno;
    return FailedPrecondition("cannot write --out " + out_path + ": " + std::strerror(error) +
                              " (is its directory there and writable?)");
  }
  std::vector<std::string> runs;
  for (const auto& [run, unused] : scalars.runs) runs.push_back(run);
  std::sort(runs.begin(), runs.end(), NaturalLess);
  out << "wrote " << options.out_path << ": " << runs.size()
      << (runs.size() == 1 ? " run (" : " runs (") << JoinCommaSeparated(runs) << "), "
      << tags.size() << (tags.size() == 1 ? " panel (" : " panels (") << JoinCommaSeparated(tags)
      << ")\n";
  out.flush();
  return Status::OK();
}

}  // namespace

int PlotCommand(const PlotCommandOptions& options, std::ostream& out, std::ostream& err) {
  return RunChecked(
      out, err,
      [&]() -> Status {
        if (options.logdir.empty() || options.out_path.empty()) {
          return InvalidArgument("plot needs --logdir DIR and --out FILE.svg");
        }
        for (const std::string& tag : options.tags) {
          if (tag.empty()) return InvalidArgument("--tags: an empty tag name (write --tags a,b)");
        }
        return Status::OK();
      },
      [&]() { return Plot(options, out, err); });
}

Subcommand AddPlotSubcommand(CLI::App* parent) {
  auto options = std::make_shared<PlotCommandOptions>();
  CLI::App* app = parent->add_subcommand(
      "plot", "Draw the scalar curves of a log directory (train --logdir) as an SVG file");
  app->add_option("--logdir", options->logdir, "Log directory written by train --logdir")
      ->required();
  app->add_option("--out", options->out_path, "The SVG file to write")->required();
  app->add_option("--tags", options->tags, "Scalars to draw, one panel each (default: all)")
      ->delimiter(',');
  return Subcommand{app, [options]() { return PlotCommand(*options, std::cout, std::cerr); }};
}

}  // namespace cli
}  // namespace actorflow
