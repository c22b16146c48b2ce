"""Latency across hosts as inline SVG box plots (fleet_report_page.py): one figure per model with a p50 and a
p99 box per rollout group and the slowest hosts named. Never one bar per host: the figure's size does not
grow with the fleet, and the SVG scales to the page's width (title and legend are HTML, so they wrap)."""

import html
import math

from fleet_report_checks import UNGROUPED, quantile

WIDTH, LEFT, RIGHT, TOP, ROW, GAP, AXIS = 640, 170, 20, 8, 18, 12, 40
COLOURS = {"p50": "#3b78b5", "p99": "#d9712b"}
WORST = 3  # slowest hosts named under each figure
MAX_DOTS = 60  # outlier dots per box, the most extreme: the page stays small at any fleet size


def _box(values):
    """(q1, median, q3, low whisker, high whisker) of sorted values (Tukey: 1.5 IQR)."""
    q1, median, q3 = quantile(values, 0.25), quantile(values, 0.5), quantile(values, 0.75)
    reach = 1.5 * (q3 - q1)
    low = min(v for v in values if v >= q1 - reach)
    high = max(v for v in values if v <= q3 + reach)
    return q1, median, q3, low, high


def _ticks(low, high, log):
    if log:
        ticks = [m * 10 ** e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1) for m in (1, 2, 5)]
        return [t for t in ticks if low <= t <= high]
    step = 10 ** math.floor(math.log10(high / 5.0))
    step = next(s * step for s in (1, 2, 5, 10) if high / (s * step) <= 6)
    return [i * step for i in range(int(high / step) + 1)]


def _scale(values):
    """(ms -> x, ticks): linear from 0, or logarithmic when the slowest host is far off the rest."""
    low, high = min(values), max(values)
    log = low > 0 and high / low > 30
    if log:
        low, high = low / 1.3, high * 1.3
        span = math.log10(high) - math.log10(low)
        return (lambda v: LEFT + (math.log10(max(v, low)) - math.log10(low)) / span * (WIDTH - LEFT - RIGHT)), _ticks(low, high, True)
    high = high * 1.05 or 1.0
    return (lambda v: LEFT + v / high * (WIDTH - LEFT - RIGHT)), _ticks(0, high, False)


def _fmt(ms):
    return "%.3g" % ms if ms < 100 else "%d" % round(ms)


def _rows(report, name):
    """[(group, {p50: [(host, ms)], p99: [...]})] in rollout-group order."""
    order = report["rollout_groups"] + [UNGROUPED]
    rows = {}
    for host in report["hosts"]:
        for model in host["models"]:
            if model["name"] == name and model["latency"]:
                row = rows.setdefault(host["group"] or UNGROUPED, {"p50": [], "p99": []})
                row["p50"].append((host["host"], model["latency"]["p50_ms"]))
                row["p99"].append((host["host"], model["latency"]["p99_ms"]))
    return sorted(rows.items(), key=lambda item: order.index(item[0]))


def _svg(name, rows, worst):
    x, ticks = _scale([v for _g, row in rows for pairs in row.values() for _h, v in pairs])
    height = TOP + len(rows) * (2 * ROW + GAP) + AXIS
    out = ['<svg viewBox="0 0 %d %d" role="img" aria-label="%s">' % (WIDTH, height, html.escape("latency of %s across hosts" % name))]
    bottom = height - AXIS + 4
    for tick in ticks:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="grid"/><text x="%.1f" y="%d" class="tick">%s</text>'
                   % (x(tick), x(tick), TOP, bottom, x(tick), bottom + 13, _fmt(tick)))
    out.append('<text x="%d" y="%d" class="unit">ms</text>' % (WIDTH - 2, bottom + 28))
    y = TOP
    for group, row in rows:
        label = "%s (%d)" % (group if len(group) <= 18 else group[:17] + "\u2026", len(row["p50"]))
        out.append('<text x="%d" y="%d" class="label"><title>%s</title>%s</text>' % (LEFT - 8, y + ROW + 4, html.escape(group), html.escape(label)))
        for metric in ("p50", "p99"):
            out.append(_one_box(row[metric], metric, x, y, worst))
            y += ROW
        y += GAP
    out.append("</svg>")
    return "".join(out)


def _one_box(pairs, metric, x, y, worst):
    values = sorted(v for _h, v in pairs)
    q1, median, q3, low, high = _box(values)
    mid, colour = y + ROW / 2.0, COLOURS[metric]
    out = ['<g class="%s"><title>%s: %d hosts, min %s, median %s, max %s ms</title>'
           % (metric, metric, len(values), _fmt(values[0]), _fmt(median), _fmt(values[-1])),
           '<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>' % (x(low), x(high), mid, mid, colour),
           '<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.35" stroke="%s"/>'
           % (x(q1), y + 3, max(x(q3) - x(q1), 1.5), ROW - 6, colour, colour),
           '<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (x(median), x(median), y + 3, y + ROW - 3, colour)]
    beyond = sorted((p for p in pairs if p[1] < low or p[1] > high), key=lambda p: -abs(p[1] - median))[:MAX_DOTS]
    for host, value in beyond + [p for p in pairs if metric == "p99" and p[0] in worst and p not in beyond]:
        ring = ' class="worst"' if metric == "p99" and host in worst else ""
        out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"%s><title>%s %s %s ms</title></circle>'
                   % (x(value), mid, colour, ring, html.escape(host), metric, _fmt(value)))
    out.append("</g>")
    return "".join(out)


def figures(report):
    """[(model, figure HTML)], one per model with a latency measurement on any host."""
    names = sorted(set(m["name"] for h in report["hosts"] for m in h["models"] if m["latency"]))
    groups = dict((h["host"], h["group"] or UNGROUPED) for h in report["hosts"])
    result = []
    for name in names:
        rows = _rows(report, name)
        p99 = sorted((pair for _g, row in rows for pair in row["p99"]), key=lambda p: (-p[1], p[0]))
        worst = [h for h, _v in p99[:WORST]]
        requests = sorted(m["latency"]["requests"] for h in report["hosts"] for m in h["models"] if m["name"] == name and m["latency"])
        title = "%s: latency across %d hosts (%d requests each)" % (name, len(p99), requests[len(requests) // 2])
        slowest = ", ".join("<b>%s</b> (%s) %s ms" % (html.escape(h), html.escape(groups[h]), _fmt(v)) for h, v in p99[:WORST])
        result.append((name, '<figure class="plot" data-model="%s"><figcaption>%s</figcaption>'
                       '<div class="legend"><span><i style="background:%s"></i>p50</span><span><i style="background:%s"></i>p99</span>'
                       '<span>box: the middle half of the hosts, bar: median, whiskers: 1.5 IQR, dots: hosts beyond, ringed: slowest</span></div>'
                       '%s<p class="worst">Slowest p99: %s</p></figure>'
                       % (html.escape(name), html.escape(title), COLOURS["p50"], COLOURS["p99"], _svg(name, rows, worst), slowest)))
    return result
