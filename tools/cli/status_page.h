// The live status page's HTML: static HTML, CSS and JavaScript with no external
// resource (no CDN), served at "/" by tools/cli/status_server.h. The script polls
// /status.json (training/summary/status_board.h) every second and renders the run's state,
// the tasks and their health, the membership, one row per worker and the loss
// curves as an inline SVG. Element ids the tests read: #state, #global-step,
// #steps-per-second, #tasks (rows data-task="ps:0"), #workers (rows
// data-worker="worker:0", cells .step), #membership, #loss-chart (one polyline per
// worker, data-worker).
#ifndef ACTORFLOW_TOOLS_CLI_STATUS_PAGE_H_
#define ACTORFLOW_TOOLS_CLI_STATUS_PAGE_H_

namespace actorflow {
namespace cli {

inline constexpr char kStatusPageHtml[] = R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>actorflow status</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin-bottom: 0.2em; }
.summary span { margin-right: 1.5em; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.8em; text-align: left; }
.up { color: #1a7f37; } .down { color: #cf222e; } .finished { color: #555; }
#error { color: #cf222e; }
</style></head>
<body>
<h1 id="title">actorflow</h1>
<div class="summary">
  <span>state: <b id="state">loading</b></span>
  <span>global step: <b id="global-step">-</b></span>
  <span>steps/s: <b id="steps-per-second">-</b></span>
  <span>applied: <b id="applied">-</b></span>
  <span>dropped as stale: <b id="dropped">-</b></span>
  <span>up: <b id="uptime">-</b></span>
</div>
<div id="error"></div>
<h2>Tasks</h2>
<table id="tasks"><thead><tr><th>task</th><th>address</th><th>health</th><th>devices</th></tr></thead><tbody></tbody></table>
<div>membership: <span id="membership">-</span></div>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>worker</th><th>step</th><th>steps/s</th><th>loss</th><th>applied</th><th>stale</th></tr></thead><tbody></tbody></table>
<h2>Loss</h2>
<svg id="loss-chart" width="640" height="280" viewBox="0 0 640 280" role="img" aria-label="loss by step"></svg>
<script>
const colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];
function cell(text, cls) { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; }
function fill(tbody, rows) { tbody.replaceChildren(...rows); }
function drawLoss(svg, series) {
  const W = 640, H = 280, L = 56, R = 110, T = 12, B = 34;
  let xmax = 1, ymin = Infinity, ymax = -Infinity;
  for (const s of series) for (const [x, y] of s.points) { xmax = Math.max(xmax, x); ymin = Math.min(ymin, y); ymax = Math.max(ymax, y); }
  if (!isFinite(ymin)) { ymin = 0; ymax = 1; }
  if (ymax - ymin < 1e-9) { ymax = ymin + 1; }
  const sx = x => L + (W - L - R) * x / xmax, sy = y => T + (H - T - B) * (1 - (y - ymin) / (ymax - ymin));
  let out = `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`;
  for (let i = 0; i <= 4; i++) {
    const y = ymin + (ymax - ymin) * i / 4, x = xmax * i / 4;
    out += `<text x="${L - 6}" y="${sy(y) + 4}" font-size="11" text-anchor="end">${y.toPrecision(3)}</text>`;
    out += `<text x="${sx(x)}" y="${H - B + 16}" font-size="11" text-anchor="middle">${Math.round(x)}</text>`;
  }
  out += `<text x="${(L + W - R) / 2}" y="${H - 4}" font-size="12" text-anchor="middle">step</text>`;
  series.forEach((s, i) => {
    const c = colors[i % colors.length];
    const pts = s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
    out += `<polyline data-worker="${s.worker}" fill="none" stroke="${c}" stroke-width="1.5" points="${pts}"/>`;
    out += `<text x="${W - R + 10}" y="${T + 14 + 16 * i}" font-size="12" fill="${c}">${s.worker}</text>`;
  });
  svg.innerHTML = out;
}
async function refresh() {
  try {
    const s = await (await fetch("/status.json", {cache: "no-store"})).json();
    document.getElementById("title").textContent = s.title;
    document.getElementById("state").textContent = s.state;
    document.getElementById("error").textContent = s.error || "";
    document.getElementById("global-step").textContent = s.global_step;
    document.getElementById("steps-per-second").textContent = s.steps_per_second.toFixed(1);
    document.getElementById("applied").textContent = s.updates_applied;
    document.getElementById("dropped").textContent = s.dropped_stale;
    document.getElementById("uptime").textContent = s.uptime_seconds.toFixed(0) + " s";
    document.getElementById("membership").textContent = s.membership.join(", ") || "none";
    fill(document.querySelector("#tasks tbody"), s.tasks.map(t => {
      const tr = document.createElement("tr"); tr.dataset.task = t.name;
      tr.append(cell(t.name), cell(t.address), cell(t.health, t.health), cell(t.devices.join(", ")));
      return tr; }));
    fill(document.querySelector("#workers tbody"), s.workers.map(w => {
      const tr = document.createElement("tr"); tr.dataset.worker = w.name;
      tr.append(cell(w.name), cell(`${w.step}/${w.planned_steps}`, "step"), cell(w.steps_per_second.toFixed(1)),
                cell(w.loss.toFixed(4)), cell(w.applied), cell(w.dropped_stale));
      return tr; }));
    drawLoss(document.getElementById("loss-chart"), s.loss);
  } catch (e) {
    document.getElementById("state").textContent = "unreachable";
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body></html>
)html";

}  // namespace cli
}  // namespace actorflow

#endif  // ACTORFLOW_TOOLS_CLI_STATUS_PAGE_H_
