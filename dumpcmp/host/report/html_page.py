"""The HTML report's fixed parts: stylesheet and script. Data arrives as inlined JSON.

The script never builds markup from data: every name and cell goes in through ``textContent``
or as a Plotly text string escaped by the Python side, so an op called ``<script>`` is shown,
not run. The Content-Security-Policy lets the page load nothing from anywhere.
"""

from __future__ import annotations

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'"
)

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5em 2em; color: #1f1f1f; }
h1 { font-size: 1.4em; margin: .8em 0 .2em; } h2 { font-size: 1.15em; margin: 1.4em 0 .4em; }
.source { color: #555; margin: 0 0 .8em; word-break: break-all; }
.summary { display: flex; flex-wrap: wrap; gap: .6em; margin: .4em 0; }
.count { padding: .3em .8em; border-radius: 4px; background: #eee; }
.count b { font-size: 1.15em; }
.grade-red { background: #ffc7ce; } .grade-yellow { background: #ffeb9c; }
.grade-green { background: #c6efce; } .grade-none { background: #f2f2f2; }
.findings { margin: .4em 0; padding-left: 1.2em; } .findings li { margin: .25em 0; }
.findings .kind { font-weight: 600; }
.plot { width: 100%; height: 420px; } #graph { height: auto; }
.note { color: #555; font-style: italic; }
.controls { display: flex; gap: .8em; align-items: center; margin: .4em 0; flex-wrap: wrap; }
.controls input[type=search] { width: 22em; padding: .25em .4em; }
.scroll { max-height: 520px; overflow: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; white-space: nowrap; text-align: left; }
td.long { max-width: 32em; overflow: hidden; text-overflow: ellipsis; }
th { position: sticky; top: 0; background: #f7f7f7; cursor: pointer; user-select: none; }
th.sorted-asc::after { content: " \\25B2"; } th.sorted-desc::after { content: " \\25BC"; }
tbody tr { cursor: pointer; } tbody tr:hover td { outline: 1px solid #999; }
#details { border: 2px solid #888; border-radius: 6px; padding: .4em 1em 1em; margin-top: 1em; }
#details[hidden] { display: none; }
#detail-title { word-break: break-all; }
#shard-rows tr.picked td { font-weight: 600; border-top: 2px solid #555; border-bottom: 2px solid #555; }
button { cursor: pointer; }
"""

SCRIPT = r"""
"use strict";
let DATA = JSON.parse(document.getElementById("report-data").textContent);
let FIGURES = JSON.parse(document.getElementById("report-figures").textContent);
// A run of several shards: every shard's data, figures, counts and findings, one shown at a time.
const SHARD_NODE = document.getElementById("report-shards");
const SHARDS = SHARD_NODE ? JSON.parse(SHARD_NODE.textContent) : null;
const CONFIG = {displaylogo: false, responsive: true};
const PAGE = 500;
const LONG_CELL = 60;
let shown = PAGE, sortColumn = -1, sortDir = 1, visible = [];

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

function rowElement(i) {
  const tr = el("tr", undefined, "grade-" + DATA.grade[i]);
  tr.dataset.row = i;
  if (DATA.why[i]) tr.title = DATA.why[i];
  for (const cell of DATA.rows[i]) {
    // Dump paths (TorchAir's Data Name holds two) would push the metric columns off the page.
    const td = tr.appendChild(el("td", cell, cell.length > LONG_CELL ? "long" : undefined));
    if (cell.length > LONG_CELL) td.title = cell;
  }
  return tr;
}

function asNumber(text) {
  const v = Number(text);
  return text !== "" && !Number.isNaN(v) ? v : null;
}

function applyTable() {
  const needle = document.getElementById("filter").value.trim().toLowerCase();
  const grade = document.getElementById("grade-filter").value;
  visible = [];
  for (let i = 0; i < DATA.rows.length; i++) {
    if (grade && DATA.grade[i] !== grade) continue;
    if (needle && !DATA.search[i].includes(needle)) continue;
    visible.push(i);
  }
  if (sortColumn >= 0) {
    const c = sortColumn;
    visible.sort((a, b) => {
      const x = DATA.rows[a][c], y = DATA.rows[b][c];
      const nx = asNumber(x), ny = asNumber(y);
      if (nx !== null && ny !== null) return (nx - ny) * sortDir;
      if (nx !== null) return -1;
      if (ny !== null) return 1;
      return x.localeCompare(y) * sortDir;
    });
  }
  const body = document.getElementById("rows");
  body.replaceChildren(...visible.slice(0, shown).map(rowElement));
  document.getElementById("row-count").textContent =
    `${visible.length} of ${DATA.rows.length} rows` +
    (visible.length > shown ? ` (first ${shown} shown)` : "");
  document.getElementById("more").hidden = visible.length <= shown;
}

function fillHead() {
  const head = document.getElementById("head");
  head.replaceChildren();
  DATA.header.forEach((name, c) => {
    const th = el("th", name);
    th.addEventListener("click", () => {
      sortDir = sortColumn === c ? -sortDir : 1;
      sortColumn = c;
      for (const other of head.children) other.className = "";
      th.className = sortDir > 0 ? "sorted-asc" : "sorted-desc";
      applyTable();
    });
    head.appendChild(th);
  });
  if (!DATA.search) DATA.search = DATA.rows.map((cells) => cells.join("\u0001").toLowerCase());
}

function buildTable() {
  fillHead();
  document.getElementById("filter").addEventListener("input", () => { shown = PAGE; applyTable(); });
  document.getElementById("grade-filter").addEventListener("change", () => { shown = PAGE; applyTable(); });
  document.getElementById("more").addEventListener("click", () => { shown += PAGE * 4; applyTable(); });
  document.getElementById("rows").addEventListener("click", (event) => {
    const tr = event.target.closest("tr");
    if (tr) showOp(DATA.rowOp[Number(tr.dataset.row)]);
  });
  applyTable();
}

function showOp(op) {
  if (op === null || op === undefined || op < 0) return;
  const info = DATA.ops[op];
  const box = document.getElementById("details");
  box.hidden = false;
  document.getElementById("detail-title").textContent =
    `op #${info.order} ${info.name}` + (info.type ? ` (${info.type})` : "");
  document.getElementById("detail-grade").textContent = "worst grade: " + info.grade;
  document.getElementById("detail-grade").className = "count grade-" + info.grade;
  document.getElementById("detail-originals").textContent =
    (info.originals.length ? "original ops: " + info.originals.join(", ") : "no original (golden) ops") +
    (info.members.length ? " · fused from: " + info.members.join(", ") : "");
  const rows = [];
  for (let i = 0; i < DATA.rows.length; i++) if (DATA.rowOp[i] === op) rows.push(i);
  const head = document.getElementById("detail-head");
  head.replaceChildren(...DATA.header.map((name) => el("th", name)));
  document.getElementById("detail-rows").replaceChildren(...rows.map(rowElement));
  drawHistogram(rows);
  box.scrollIntoView({block: "nearest"});
}

function drawHistogram(rows) {
  const all = [];
  const err = DATA.errs[DATA.errName] || [];
  for (const v of err) if (v !== null && v > 0) all.push(Math.log10(v));
  const mine = rows.map((i) => err[i]).filter((v) => v !== null && v !== undefined);
  // An exact 0 has no logarithm: its line stands one decade left of the smallest error, labelled.
  const zeroAt = (all.length ? Math.min(...all) : 0) - 1;
  const at = (v) => (v > 0 ? Math.log10(v) : zeroAt);
  const shapes = mine.map((v) => ({
    type: "line", xref: "x", yref: "paper", y0: 0, y1: 1, x0: at(v), x1: at(v),
    line: {color: "#c62828", width: 2},
  }));
  const annotations = mine.some((v) => v <= 0)
    ? [{x: zeroAt, y: 1, xref: "x", yref: "paper", text: "exact 0", showarrow: false, yanchor: "bottom"}]
    : [];
  const layout = {
    template: "none", margin: {t: 40, r: 20, b: 50, l: 60}, shapes: shapes, bargap: 0.05,
    annotations: annotations,
    title: {text: `log10 ${DATA.errName} of every compared tensor; red lines: this op's tensors`,
            font: {size: 13}},
    xaxis: {title: {text: `log10 ${DATA.errName}`}}, yaxis: {title: {text: "tensors"}},
  };
  Plotly.react("histogram", [{type: "histogram", x: all, marker: {color: "#90a4ae"}}], layout, CONFIG);
}

// The error metric the plot shows: each op's worst judged output, NaN/inf as red crosses on top.
function chooseError(name) {
  DATA.errName = name;
  const err = DATA.errs[name];
  const worst = DATA.ops.map(() => ({v: null, special: false}));
  err.forEach((v, i) => {
    if (!DATA.valueRow[i]) return;
    const w = worst[DATA.rowOp[i]];
    if (v === null) w.special = true;
    else if (w.v === null || v > w.v) w.v = v;
  });
  const finite = worst.filter((w) => w.v !== null && w.v > 0).map((w) => w.v);
  const top = Math.max(DATA.errorFloor, ...finite) * 10;
  const figure = FIGURES.metrics;
  const data = figure.data.filter((t) => t.name !== "NaN/inf (worst) error");
  const line = data.find((t) => t.yaxis === "y2");
  line.name = `${name} (worst output, log)`;
  line.y = worst.map((w) => (w.special || w.v === null ? null : Math.max(w.v, DATA.errorFloor)));
  const marked = DATA.ops.map((op, k) => k).filter((k) => worst[k].special);
  if (marked.length) {
    data.push({type: "scatter", mode: "markers", name: "NaN/inf (worst) error", yaxis: "y2",
               x: marked.map((k) => DATA.ops[k].order), y: marked.map(() => top),
               customdata: marked, text: marked.map((k) => line.text[k]),
               hovertemplate: "%{text}<extra></extra>",
               marker: {color: "#e53935", size: 11, symbol: "x"}});
  }
  figure.data = data;
  figure.layout.yaxis2.title = {text: `${name} (log)`};
  return Plotly.react("metrics", figure.data, figure.layout, CONFIG);
}

function onPick(event) {
  const point = event.points && event.points[0];
  if (point && point.customdata !== undefined && point.customdata !== null) showOp(point.customdata);
}

// Show shard ``k`` of a run: its counts, findings, figures and table, as a one-shard report would.
function pickShard(k) {
  const shard = SHARDS[k];
  DATA = shard.data;
  FIGURES = shard.figures;
  document.getElementById("shard").value = String(k);
  document.getElementById("source").textContent = shard.source;
  document.getElementById("summary").replaceChildren(...shard.counts.map(([grade, n, label]) => {
    const span = el("span", undefined, "count grade-" + grade);
    span.append(el("b", String(n)), " " + label);
    return span;
  }));
  const findings = document.getElementById("findings");
  if (findings) {
    findings.replaceChildren(...shard.findings.map((line) => {
      const li = el("li");
      const at = line.indexOf(":");
      if (at >= 0) li.append(el("span", line.slice(0, at), "kind"), line.slice(at));
      else li.textContent = line;
      return li;
    }));
  }
  for (const row of document.querySelectorAll("#shard-rows tr")) {
    row.classList.toggle("picked", row.dataset.shard === String(k));
  }
  document.getElementById("details").hidden = true;
  shown = PAGE;
  sortColumn = -1;
  fillHead();
  applyTable();
  document.body.dataset.ready = "";
  const drawn = [];
  for (const id of ["metrics", "graph"]) {
    const div = document.getElementById(id);
    if (!div) continue;
    const figure = FIGURES[id];
    if (!figure) {
      Plotly.purge(div);
      continue;
    }
    // React may plot anew, which drops the click handler: bind it again, once.
    drawn.push(Plotly.react(div, figure.data, figure.layout, CONFIG).then(() => {
      div.removeAllListeners("plotly_click");
      div.on("plotly_click", onPick);
    }));
  }
  const choice = document.getElementById("error-metric");
  return Promise.all(drawn).then(() => {
    if (choice && DATA.errs[choice.value] && choice.value !== DATA.errName) return chooseError(choice.value);
    return null;
  }).then(() => { document.body.dataset.shard = String(k); document.body.dataset.ready = "1"; });
}

function setupShards() {
  if (!SHARDS) return;
  const picker = document.getElementById("shard");
  picker.addEventListener("change", () => pickShard(Number(picker.value)));
  document.getElementById("shard-rows").addEventListener("click", (event) => {
    const tr = event.target.closest("tr");
    if (tr) pickShard(Number(tr.dataset.shard));
  });
  document.body.dataset.shard = "0";
}

function drawFigures() {
  const drawn = [];
  for (const [id, figure] of Object.entries(FIGURES)) {
    const div = document.getElementById(id);
    if (!div) continue;
    const plotted = Plotly.newPlot(div, figure.data, figure.layout, CONFIG);
    drawn.push(plotted.then(() => div.on("plotly_click", onPick)));
  }
  return Promise.all(drawn);
}

buildTable();
setupShards();
const errorChoice = document.getElementById("error-metric");
if (errorChoice) errorChoice.addEventListener("change", () => chooseError(errorChoice.value));
// Tests and screenshots wait for this: the table and every figure are drawn.
drawFigures().then(() => { document.body.dataset.ready = "1"; });
"""
