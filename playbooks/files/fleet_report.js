// The fleet report's per-host tables (fleet_report_page.py): filter and sort in the page itself, no
// framework and nothing fetched, so the report stays one file that opens anywhere.
(function () {
  "use strict";
  var form = document.getElementById("filter"), detail = document.getElementById("detail");
  var tables = Array.prototype.slice.call(document.querySelectorAll("table.detail"));
  function has(list, word) { return (" " + list + " ").indexOf(" " + word + " ") >= 0; }
  function apply() {
    var text = form.host.value.trim().toLowerCase(), group = form.group.value, model = form.model.value, state = form.state.value;
    var counts = tables.map(function (table) {
      var rows = table.tBodies[0].rows, shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var d = rows[i].dataset;
        var ok = d.h.toLowerCase().indexOf(text) >= 0 && (!group || d.g === group) && (!model || has(d.m, model)) && (!state || has(d.s, state));
        rows[i].hidden = !ok;
        shown += ok ? 1 : 0;
      }
      return shown + " of " + rows.length;
    });
    document.getElementById("shown").value = "showing " + counts[0] + " hosts, " + counts[1] + " model rows";
    if (text || group || model || state) { detail.open = true; }
  }
  function sortBy(th) {
    var table = th.closest("table"), column = th.cellIndex, up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    function key(row) { var cell = row.cells[column]; return cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent; }
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), nx = Number(x), ny = Number(y);
      var order = x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y, undefined, {numeric: true});
      return up ? order : -order;
    });
    table.tBodies[0].append.apply(table.tBodies[0], rows);
  }
  form.addEventListener("input", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  tables.forEach(function (table) {
    table.tHead.addEventListener("click", function (event) { if (event.target.closest("th")) { sortBy(event.target.closest("th")); } });
  });
  apply();
})();
