"""The report page's stylesheet and its one script, kept apart from the page's structure (reports/html.py).

Both are inlined into report.html: the page opens from the file with no server and fetches nothing. The script is
the runs table's filter and sort (reports/runs_explorer.py); every other part of the page works without it.
"""

from __future__ import annotations

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem 1rem 3rem; color: #1d1d1f;
       background: #ffffff; line-height: 1.35; }
p, figcaption, nav.toc { max-width: 80rem; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-top: 1.6rem; }
nav.toc { font-size: 0.85rem; border: 1px solid #e4e4e4; background: #fafbfc; padding: 0.4rem 1rem; }
nav.toc h2 { margin-top: 0.6rem; }
nav.toc > ol { columns: 3 20rem; column-gap: 2rem; padding-left: 1.2rem; }
nav.toc > ol > li { break-inside: avoid; margin-bottom: 0.4rem; }
nav.toc ol ol { padding-left: 1rem; margin: 0.1rem 0 0; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.metrics { border-collapse: collapse; font-size: 0.76rem; margin: 0.4rem 0 0.3rem; }
table.metrics th, table.metrics td { border: 1px solid #ccc; padding: 0.25rem 0.22rem; vertical-align: top; }
table.metrics th { background: #f0f3f7; text-align: left; vertical-align: bottom; }
table.metrics tr:nth-child(even) td { background: #fafafa; }
table.metrics .num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
table.metrics th.num { text-align: right; white-space: normal; min-width: 2rem; width: 1px; }
table.metrics td.text { max-width: 32rem; overflow-wrap: break-word; }
/* a table wider than the window scrolls sideways under its first column, which names the row */
table.metrics th:first-child, table.metrics td:first-child { position: sticky; left: 0; z-index: 1;
  box-shadow: 1px 0 0 #ccc; }
table.metrics td:first-child { background: #ffffff; }
.scroll { overflow-x: auto; max-width: 100%; }
p.note, p.meta { font-size: 0.82rem; color: #444; }
figure { margin: 1rem 0 2rem; } figure img { max-width: min(100%, 56rem); height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85rem; color: #444; }
.warning { color: #8a4b00; }
.runs-controls { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: flex-end; font-size: 0.82rem;
                 margin: 0.6rem 0; }
.runs-controls label { display: flex; flex-direction: column; gap: 0.15rem; color: #444; }
.runs-controls select, .runs-controls input, .runs-controls button { font: inherit; max-width: 16rem; }
.runs-status { font-size: 0.85rem; margin: 0.4rem 0; }
.runs-more button { font: inherit; font-size: 0.82rem; margin: 0.3rem 0.5rem 0.3rem 0; }
table.runs th button { all: unset; cursor: pointer; }
table.runs th button:focus-visible { outline: 2px solid #1565c0; }
table.runs th[aria-sort="ascending"] button::after { content: " \\25B2"; font-size: 0.7em; }
table.runs th[aria-sort="descending"] button::after { content: " \\25BC"; font-size: 0.7em; }
table.runs { font-size: 0.74rem; }
table.runs td.text { white-space: nowrap; }
table.runs td.text:last-child { white-space: normal; }
@media screen and (max-width: 60rem) {
  body { margin: 1rem; }
  table.runs, table.runs thead, table.runs tbody { display: block; }
  table.runs thead tr { display: flex; flex-wrap: wrap; gap: 0.3rem; margin-bottom: 0.5rem; }
  table.runs thead th.text, table.runs thead th.num { border-radius: 0.2rem; padding: 0.15rem 0.4rem; width: auto;
      min-width: 0; white-space: nowrap; text-align: left; }
  table.runs thead tr::before { content: "sort by"; align-self: center; font-size: 0.75rem; color: #666; }
  table.runs tr:nth-child(even) td { background: none; }
  table.runs tbody tr { display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr));
                  border: 1px solid #ccc; margin-bottom: 0.5rem; }
  table.runs td.text, table.runs td.num, table.runs td.text:last-child { border: none; text-align: left;
      white-space: normal; overflow-wrap: anywhere; min-width: 0; }
  table.runs td::before { content: attr(data-label); display: block; font-size: 0.72rem; color: #666; }
}
@media print {
  body { margin: 0; font-size: 9pt; }
  nav.toc > ol { columns: 2; }
  .table-wrap, .scroll { overflow: visible; }
  .runs-controls, .runs-more, noscript { display: none; }
  thead { display: table-header-group; }
  tr, figure { break-inside: avoid; }
  h2, h3 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
  table.runs th button::after { content: none; }
  table.metrics, table.runs { font-size: 7pt; }
  table.runs td.text { white-space: normal; }
}
"""

# The runs table (reports/runs_explorer.py): rows from the JSON blob #runs-data, run pages from #run-pages, state in
# the URL fragment (#runs?verdict=late&mode=react&sort=latency&desc=1). At most data.limit rows are drawn at a time;
# before printing, every matching row is.
SCRIPT = """
(function () {
  "use strict";
  var root = document.getElementById("runs-table");
  if (!root) { return; }
  var data = JSON.parse(document.getElementById("runs-data").textContent);
  var pages = JSON.parse(document.getElementById("run-pages").textContent);
  var cols = data.columns, rows = data.rows, step = data.limit;
  var tbody = root.querySelector("tbody"), status = root.querySelector(".runs-status");
  var more = root.querySelector(".runs-more"), text = root.querySelector("input[name=q]");
  var selects = {}, state = { filters: {}, q: "", sort: "", desc: false, shown: step };
  var number = new Intl.NumberFormat("en");

  function show(value, col) {
    if (value === null || value === "") { return "\\u2013"; }
    if (!col.numeric) { return String(value); }
    return col.decimals ? value.toFixed(col.decimals) : number.format(value);
  }
  cols.forEach(function (col, i) {
    col.index = i;
    var select = root.querySelector("select[name=" + col.key + "]");
    if (!select) { return; }
    selects[col.key] = col;
    var counts = {};
    rows.forEach(function (row) { var v = row[i] === null ? "" : String(row[i]); counts[v] = (counts[v] || 0) + 1; });
    Object.keys(counts).sort().forEach(function (v) {
      var option = document.createElement("option");
      option.value = v;
      option.textContent = (v === "" ? "(blank)" : v) + " (" + number.format(counts[v]) + ")";
      select.appendChild(option);
    });
    select.addEventListener("change", function () { state.filters[col.key] = select.value; changed(); });
  });
  root.querySelectorAll("thead th").forEach(function (th, i) {
    th.querySelector("button").addEventListener("click", function () {
      var key = cols[i].key;
      state.desc = state.sort === key ? !state.desc : false;
      state.sort = key;
      changed();
    });
  });
  text.addEventListener("input", function () { state.q = text.value; changed(); });
  root.querySelector("button[name=clear]").addEventListener("click", function () {
    state.filters = {}; state.q = ""; state.sort = ""; state.desc = false; changed();
  });

  function matching() {
    var needle = state.q.trim().toLowerCase();
    var keep = rows.filter(function (row) {
      for (var key in state.filters) {
        var want = state.filters[key];
        var cell = row[selects[key].index];
        if (want && want !== "*" && (cell === null ? "" : String(cell)) !== want) {
          return false;
        }
      }
      return !needle || row.join("\\u0001").toLowerCase().indexOf(needle) >= 0;
    });
    var col = cols.filter(function (c) { return c.key === state.sort; })[0];
    if (col) {
      var i = col.index, sign = state.desc ? -1 : 1;
      keep = keep.map(function (row, n) { return [row, n]; });
      keep.sort(function (a, b) {
        var x = a[0][i], y = b[0][i];
        if (x === y) { return a[1] - b[1]; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        return (col.numeric ? x - y : String(x).localeCompare(String(y))) * sign || a[1] - b[1];
      });
      keep = keep.map(function (pair) { return pair[0]; });
    }
    return keep;
  }

  function render() {
    var keep = matching(), shown = Math.min(keep.length, state.shown), parts = document.createDocumentFragment();
    for (var n = 0; n < shown; n++) {
      var row = keep[n], tr = document.createElement("tr");
      cols.forEach(function (col, i) {
        var td = document.createElement("td"), value = row[i];
        td.className = col.numeric ? "num" : "text";
        td.setAttribute("data-label", col.header);
        if (col.key === "run" && pages[value]) {
          var a = document.createElement("a");
          a.href = pages[value];
          a.textContent = value;
          td.appendChild(a);
        } else {
          td.textContent = show(value, col);
        }
        if (selects[col.key]) { tr.setAttribute("data-" + col.key, value === null ? "" : String(value)); }
        tr.appendChild(td);
      });
      parts.appendChild(tr);
    }
    tbody.replaceChildren(parts);
    status.textContent = "Showing " + number.format(shown) + " of " + number.format(keep.length) +
      " matching runs (" + number.format(rows.length) + " in the table" +
      (data.total > rows.length ? ", of " + number.format(data.total) + " in the report: " + data.capped : "") + ").";
    more.hidden = shown >= keep.length;
    more.querySelector("button[name=all]").textContent = "show all " + number.format(keep.length);
    root.querySelectorAll("thead th").forEach(function (th, i) {
      if (cols[i].key === state.sort) { th.setAttribute("aria-sort", state.desc ? "descending" : "ascending"); }
      else { th.removeAttribute("aria-sort"); }
    });
    Object.keys(selects).forEach(function (key) {
      root.querySelector("select[name=" + key + "]").value = state.filters[key] || "*";
    });
    text.value = state.q;
  }

  function fragment() {
    var params = new URLSearchParams();
    Object.keys(state.filters).forEach(function (key) {
      if (state.filters[key] && state.filters[key] !== "*") { params.set(key, state.filters[key]); }
    });
    if (state.q) { params.set("q", state.q); }
    if (state.sort) { params.set("sort", state.sort); }
    if (state.sort && state.desc) { params.set("desc", "1"); }
    var query = params.toString();
    return "#runs" + (query ? "?" + query : "");
  }
  function changed() {
    state.shown = step;
    history.replaceState(null, "", fragment());
    render();
  }
  function fromFragment() {
    var hash = location.hash.slice(1);
    if (hash !== "runs" && hash.indexOf("runs?") !== 0) { return false; }
    var params = new URLSearchParams(hash.slice(5));
    state.filters = {};
    Object.keys(selects).forEach(function (key) { if (params.has(key)) { state.filters[key] = params.get(key); } });
    state.q = params.get("q") || "";
    state.sort = params.get("sort") || "";
    state.desc = params.get("desc") === "1";
    state.shown = step;
    return true;
  }
  root.querySelectorAll(".runs-more button").forEach(function (button) {
    button.addEventListener("click", function () {
      state.shown = button.name === "all" ? Infinity : state.shown + step;
      render();
    });
  });
  window.addEventListener("hashchange", function () { if (fromFragment()) { render(); root.scrollIntoView(); } });
  window.addEventListener("beforeprint", function () {
    state.printing = state.shown; state.shown = Infinity; render();
  });
  window.addEventListener("afterprint", function () { state.shown = state.printing || step; render(); });
  var linked = fromFragment();
  render();
  root.setAttribute("data-ready", "1");
  if (linked) { window.addEventListener("load", function () { root.scrollIntoView(); }); }
})();
"""
