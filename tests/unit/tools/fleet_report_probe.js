// Appended to a copy of the fleet report by test_fleet_report_browser.py: measures the page as Chromium laid
// it out, uses the filter and the sort like a person would, and writes what it found into the DOM as JSON
// (chromium --dump-dom prints it). __HOST__ is the host name the test types into the filter.
(function () {
  "use strict";
  var width = window.innerWidth, found = {innerWidth: width};
  function box(el) { var r = el.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width, height: r.height}; }
  function inView(el) { var r = box(el); return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= width; }
  function overflow() { return document.documentElement.scrollWidth; }
  found.scrollWidth = overflow();
  found.sections = Array.prototype.map.call(document.querySelectorAll("body > section"), function (s) { return s.id; });
  found.firstAfterHeader = document.querySelector("body > header").nextElementSibling.id;
  found.counts = Array.prototype.map.call(document.querySelectorAll("#counts .count"), function (c) { return c.textContent; });
  found.plots = Array.prototype.map.call(document.querySelectorAll("figure.plot"), function (figure) {
    var caption = figure.querySelector("figcaption"), legend = figure.querySelector(".legend"), svg = figure.querySelector("svg");
    var view = svg.viewBox.baseVal, clipped = [];
    // every label drawn in the SVG lies inside its viewBox (nothing cut at an edge)
    Array.prototype.forEach.call(svg.querySelectorAll("text"), function (text) {
      var b = text.getBBox();
      if (b.x < 0 || b.x + b.width > view.width || b.y < 0 || b.y + b.height > view.height) { clipped.push(text.textContent); }
    });
    return {model: figure.dataset.model, caption: caption.textContent, captionVisible: inView(caption) && caption.scrollWidth <= caption.clientWidth,
            legendVisible: inView(legend) && legend.scrollWidth <= legend.clientWidth, svgVisible: inView(svg), svg: box(svg), clipped: clipped,
            boxes: svg.querySelectorAll("rect").length, dots: svg.querySelectorAll("circle").length};
  });
  var form = document.getElementById("filter"), rows = document.querySelectorAll("#host-table tbody tr");
  found.detailOpenBefore = document.getElementById("detail").open;
  found.hostRows = rows.length;
  form.host.value = "__HOST__";
  form.host.dispatchEvent(new Event("input", {bubbles: true}));
  function shown(selector) {
    return Array.prototype.filter.call(document.querySelectorAll(selector), function (r) { return !r.hidden && r.offsetParent !== null; })
      .map(function (r) { return r.dataset.h; });
  }
  found.filtered = {hosts: shown("#host-table tbody tr"), models: shown("#model-table tbody tr"), detailOpen: document.getElementById("detail").open,
                    output: document.getElementById("shown").value, scrollWidth: overflow()};
  form.host.value = "";
  form.state.value = "attention";
  form.state.dispatchEvent(new Event("input", {bubbles: true}));
  found.attention = shown("#host-table tbody tr");
  form.state.value = "";
  form.state.dispatchEvent(new Event("input", {bubbles: true}));
  found.allShownAgain = shown("#host-table tbody tr").length;
  found.scrollWidthOpen = overflow();
  // sort the models table by p99, slowest first (two clicks: ascending, then descending)
  var p99 = document.querySelectorAll("#model-table thead th")[7];
  p99.click();
  p99.click();
  found.sortedP99 = Array.prototype.slice.call(document.querySelectorAll("#model-table tbody tr"), 0, 5).map(function (r) { return Number(r.cells[7].dataset.v); });
  var out = document.createElement("pre");
  out.id = "probe-result";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
})();
