/* barrage HTML report: the data embedded in the page (#barrage-data, written by
   crates/report/src/html.rs) turned into uPlot options and data arrays. Every chart is uPlot;
   this file draws nothing itself but event markers and reference lines (a uPlot plugin).
   After drawing it writes a self-check (#barrage-selfcheck) that tests read:
   {"charts": {id: {"series": n, "points": non-null values, "drawn": draws, "markers": vertical
   markers drawn in the last draw, and on the latency chart of a run with trace context
   "exemplars": ringed p99 points drawn in the last draw}}, "errors": [...]};
   window.__barrageFlush() rewrites it, and window.barrageCharts holds the uPlot instances. */
(function () {
  "use strict";

  // Okabe–Ito: distinguishable with the common colour-vision deficiencies.
  const OI = {
    black: "#000000",
    orange: "#E69F00",
    sky: "#56B4E9",
    green: "#009E73",
    yellow: "#F0E442",
    blue: "#0072B2",
    vermillion: "#D55E00",
    purple: "#CC79A7",
    grey: "#999999",
  };
  const CYCLE = [OI.blue, OI.orange, OI.green, OI.vermillion, OI.purple, OI.sky, OI.black, OI.yellow];
  const PHASES = ["dns", "connect", "tls", "send", "wait", "receive"];
  const PHASE_COLOURS = {
    dns: OI.purple,
    connect: OI.orange,
    tls: OI.yellow,
    send: OI.sky,
    wait: OI.blue,
    receive: OI.green,
  };

  const errors = window.__barrageErrors || (window.__barrageErrors = []);
  const charts = {}; // id -> {u, drawn, plot, height}
  // The run's time, [start, end] in seconds: every time chart shows all of it when zoomed out.
  let timeSpan = null;

  // ---- self-check ----------------------------------------------------------------------

  function flush() {
    const out = { charts: {}, errors: errors.slice() };
    for (const id of Object.keys(charts)) {
      const c = charts[id];
      let points = 0;
      for (let i = 1; i < c.u.data.length; i++) {
        for (const v of c.u.data[i] || []) {
          if (v != null && Number.isFinite(v)) points++;
        }
      }
      out.charts[id] = { series: c.u.series.length - 1, points: points, drawn: c.drawn, markers: c.u.__markers || 0 };
      if (c.u.__exemplars != null) out.charts[id].exemplars = c.u.__exemplars;
    }
    const pre = document.getElementById("barrage-selfcheck");
    if (pre) pre.textContent = JSON.stringify(out);
  }
  window.__barrageFlush = flush;
  /** The charts by id, for a console or a test: {id: uPlot}. */
  window.barrageCharts = {};

  // ---- formatting ----------------------------------------------------------------------

  const dash = "–";
  const finite = (v) => v != null && Number.isFinite(v);
  const grouped = (v, d) =>
    v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  const fmt = {
    ms: (v) => (finite(v) ? (v >= 100 ? grouped(v, 1) : v >= 1 ? v.toFixed(2) : v.toFixed(3)) + " ms" : dash),
    rate: (v) => (finite(v) ? grouped(v, v >= 100 ? 0 : 1) + "/s" : dash),
    pct: (v) => (finite(v) ? v.toFixed(v >= 99.95 || v < 0.05 ? 1 : 2) + " %" : dash),
    count: (v) => (finite(v) ? grouped(v, 0) : dash),
    mib: (v) => (finite(v) ? grouped(v, 1) + " MiB" : dash),
    secs: (v) => (finite(v) ? (Math.abs(v) >= 100 ? grouped(v, 0) : v.toFixed(2)) + " s" : dash),
    num: (v) => (finite(v) ? grouped(v, Math.abs(v) >= 100 ? 0 : 2) : dash),
  };
  // Tick labels: short, without units (the axis label says them).
  const ticks = (f) => (u, splits) => splits.map((v) => (v == null ? "" : f(v)));
  const short = (v) => {
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toFixed(2) + "M";
    if (a >= 1e4) return +(v / 1e3).toFixed(1) + "k";
    return +v.toFixed(a >= 100 ? 0 : a >= 1 ? 2 : 3) + "";
  };

  /** `n` nines (x = -log10(1 - p/100)) as a percentile: 0 → "0%", 1 → "90%", 3 → "99.9%". */
  function ninesLabel(n, extra) {
    const p = 100 * (1 - Math.pow(10, -n));
    const digits = Math.max(0, Math.ceil(n - 1e-9) - 2) + (extra || 0);
    return (n <= 0 ? "0" : p.toFixed(Math.min(digits, 12))) + "%";
  }

  function truncate(s, n) {
    return s.length > n ? s.slice(0, n - 1) + "…" : s;
  }

  // ---- DOM -----------------------------------------------------------------------------

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }

  const root = () => document.getElementById("charts");

  /** A titled section of charts; returns the grid to put them in. */
  function section(title, small) {
    const s = el("section", { class: "charts" });
    s.appendChild(el("h2", null, title));
    const grid = el("div", { class: "grid" + (small ? " small" : "") });
    s.appendChild(grid);
    root().appendChild(s);
    return grid;
  }

  // ---- uPlot building blocks -----------------------------------------------------------

  const xTime = { label: "time", value: (u, v) => (finite(v) ? fmt.secs(v) : dash) };

  function line(label, colour, f, extra) {
    return Object.assign(
      { label: label, stroke: colour, width: 1.5, value: (u, v) => f(v), points: { show: false } },
      extra || {}
    );
  }

  function dots(label, colour, f) {
    return {
      label: label,
      stroke: colour,
      fill: colour,
      width: 1,
      paths: () => null,
      points: { show: true, size: 3.5, width: 0.5, stroke: colour, fill: colour },
      value: (u, v) => f(v),
    };
  }

  function axis(label, f, extra) {
    return Object.assign({ label: label, size: 64, values: ticks(f || short) }, extra || {});
  }

  const fromZero = (u, min, max) => [0, max > 0 ? uPlot.rangeNum(0, max, 0.1, true)[1] : 1];

  /** Text on a light box, readable over the data. */
  function label(ctx, text, x, y, w, r, colour) {
    ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
    ctx.fillRect(x - 2 * r, y - 1 * r, w + 4 * r, 14 * r);
    ctx.fillStyle = colour;
    ctx.fillText(text, x, y);
  }

  /** Vertical markers at x values (events, the knee) and horizontal ones at y values (SLOs). */
  function linesPlugin(xs, ys) {
    return {
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            const r = uPlot.pxRatio;
            const { left, top, width, height } = u.bbox;
            ctx.save();
            ctx.lineWidth = 1.5 * r;
            ctx.font = 11 * r + "px system-ui, sans-serif";
            ctx.textAlign = "left";
            let drawn = 0;
            (xs || []).forEach((m, i) => {
              if (!finite(m.at)) return;
              const x = Math.round(u.valToPos(m.at, "x", true));
              if (x < left - 1 || x > left + width + 1) return;
              drawn++;
              ctx.setLineDash((m.dash || [6, 4]).map((d) => d * r));
              ctx.strokeStyle = ctx.fillStyle = m.colour || OI.purple;
              ctx.beginPath();
              ctx.moveTo(x, top);
              ctx.lineTo(x, top + height);
              ctx.stroke();
              ctx.textBaseline = "top";
              const text = truncate(m.label, 40);
              const w = ctx.measureText(text).width;
              const tx = x + 4 * r + w > left + width ? x - 4 * r - w : x + 4 * r;
              const ty = top + (2 + 14 * (i % 4)) * r;
              label(ctx, text, tx, ty, w, r, m.colour || OI.purple);
            });
            u.__markers = drawn;
            ctx.setLineDash([6 * r, 4 * r]);
            (ys || []).forEach((m) => {
              if (!finite(m.at)) return;
              const y = Math.round(u.valToPos(m.at, m.scale || "y", true));
              if (y < top - 1 || y > top + height + 1) return;
              ctx.strokeStyle = ctx.fillStyle = m.colour || OI.vermillion;
              ctx.beginPath();
              ctx.moveTo(left, y);
              ctx.lineTo(left + width, y);
              ctx.stroke();
              ctx.textBaseline = "top";
              const text = truncate(m.label, 40);
              const w = ctx.measureText(text).width;
              label(ctx, text, left + width - w - 4 * r, y - 15 * r, w, r, m.colour || OI.vermillion);
            });
            ctx.restore();
          },
        ],
      },
    };
  }

  /**
   * A run's exemplars (`--trace-context`): the p99 of each interval that has some is ringed
   * (the last series, `p99 traced`), and the interval under the cursor has its slowest sampled
   * requests listed under the chart: latency, trace id (a link when the page was written with
   * --trace-url; the URL comes filled in from the data, never built here) and when it ended.
   * A click keeps the list while the mouse moves on (to follow a link); another lets it go.
   * ex: each interval's slowest exemplars, [ms, ended_s, trace_id, span_id, url?]; T: the
   * series (t, length_s, p99_ms).
   */
  function exemplarsPlugin(ex, T) {
    let panel = null;
    let shown = null;
    let pinned = false;
    const hint = "Ringed p99 points have traces: hover one to list its interval's slowest sampled requests; click to keep the list.";
    function show(i, force) {
      if (!panel || (i === shown && !force)) return;
      shown = i;
      panel.textContent = "";
      const list = (i != null && ex[i]) || [];
      if (!list.length) {
        panel.appendChild(el("p", { class: "hint" }, hint));
        return;
      }
      const span = fmt.secs(T.t[i]) + "–" + fmt.secs(T.t[i] + T.length_s[i]);
      const kept = pinned ? " (kept: click the chart to let go)" : "";
      panel.appendChild(el("p", { class: "head" }, "Slowest sampled requests of " + span + ", p99 " + fmt.ms(T.p99_ms[i]) + kept));
      const ol = el("ol");
      for (const [ms, at, trace, spanId, url] of list) {
        const li = el("li");
        li.appendChild(el("span", { class: "ms" }, fmt.ms(ms)));
        li.appendChild(document.createTextNode(" trace "));
        const attrs = url ? { class: "trace-id", href: url, target: "_blank", rel: "noopener noreferrer" } : { class: "trace-id" };
        li.appendChild(el(url ? "a" : "code", attrs, trace));
        li.appendChild(document.createTextNode(" span " + spanId + ", ended at " + fmt.secs(at)));
        ol.appendChild(li);
      }
      panel.appendChild(ol);
    }
    return {
      hooks: {
        ready: [
          (u) => {
            panel = el("div", { class: "exemplars", id: "exemplars", "aria-live": "polite" });
            (u.root.closest("figure") || document.getElementById("chart-latency")).appendChild(panel);
            show(null, true);
            // uPlot stops the click that ends a drag (a zoom) before it gets here.
            u.over.addEventListener("click", () => {
              const i = u.cursor.idx;
              pinned = !(pinned && i === shown) && i != null && !!(ex[i] && ex[i].length);
              show(i, true);
            });
          },
        ],
        // Leaving the chart keeps the list (the mouse is on its way to a link).
        setCursor: [(u) => u.cursor.idx != null && !pinned && show(u.cursor.idx)],
        draw: [
          (u) => {
            const k = u.series.length - 1;
            const { min, max } = u.scales.x;
            u.__exemplars = u.series[k].show ? u.data[k].filter((v, i) => finite(v) && u.data[0][i] >= min && u.data[0][i] <= max).length : 0;
          },
        ],
      },
    };
  }

  /**
   * One chart: a figure with a title and an aria-label, a uPlot inside.
   * spec: {id, title, aria, note, time, small, height, opts, data}
   */
  function chart(parent, spec) {
    const fig = el("figure", { class: "chart", id: "chart-" + spec.id, role: "figure", "aria-label": spec.aria });
    fig.appendChild(el("figcaption", null, spec.title));
    const plot = el("div", { class: "plot" });
    fig.appendChild(plot);
    if (spec.note) fig.appendChild(el("p", { class: "note" }, spec.note));
    parent.appendChild(fig);

    const opts = spec.opts;
    const height = spec.height || (spec.small ? 200 : 280);
    opts.width = Math.max(240, plot.clientWidth || 800);
    opts.height = height;
    opts.scales = opts.scales || {};
    opts.scales.x = Object.assign({ time: false }, opts.scales.x || {});
    opts.hooks = opts.hooks || {};
    const entry = { u: null, drawn: 0, plot: plot, height: height };
    (opts.hooks.draw = opts.hooks.draw || []).push(() => entry.drawn++);
    if (spec.time) {
      // Time charts share the cursor, and uPlot's sync carries a drag (zoom) and a
      // double-click (zoom out) on one to the others.
      opts.cursor = Object.assign({ sync: { key: "barrage-time" }, drag: { x: true, y: false } }, opts.cursor || {});
      const xs = spec.data[0];
      if (timeSpan && xs.length) {
        // uPlot ranges x over the data when zoomed out (and over the selection when zoomed
        // in): widen the former to the whole run, so that the time charts line up.
        const [lo, hi] = [xs[0], xs[xs.length - 1]];
        opts.scales.x.range = (u, min, max) =>
          min <= lo && max >= hi ? [Math.min(min, timeSpan[0]), Math.max(max, timeSpan[1])] : [min, max];
      }
    }
    entry.u = new uPlot(opts, spec.data, plot);
    charts[spec.id] = entry;
    window.barrageCharts[spec.id] = entry.u;
    return entry.u;
  }

  /** Values of several series over different sorted xs, on the union of the xs (nulls elsewhere). */
  function align(xss, yss) {
    const all = Array.from(new Set([].concat(...xss))).sort((a, b) => a - b);
    const at = new Map(all.map((x, i) => [x, i]));
    const ys = yss.map((y, k) => {
      const out = new Array(all.length).fill(null);
      xss[k].forEach((x, i) => (out[at.get(x)] = y[i]));
      return out;
    });
    return [all].concat(ys);
  }

  /** Cumulative series for a stacked chart, and the bands that fill between them. */
  function stack(raw, fills, omit) {
    const n = raw[0].length;
    const any = new Array(n).fill(false);
    for (let s = 1; s < raw.length; s++) {
      if (omit(s)) continue;
      for (let i = 0; i < n; i++) if (raw[s][i] != null) any[i] = true;
    }
    const acc = new Array(n).fill(0);
    const data = [raw[0]];
    for (let s = 1; s < raw.length; s++) {
      if (omit(s)) data.push(raw[s]);
      else data.push(raw[s].map((v, i) => (any[i] ? (acc[i] += v == null ? 0 : v) : null)));
    }
    const bands = [];
    for (let s = 1; s < raw.length; s++) {
      if (omit(s)) continue;
      let up = -1;
      for (let j = s + 1; j < raw.length; j++) {
        if (!omit(j)) {
          up = j;
          break;
        }
      }
      if (up > 0) bands.push({ series: [up, s], fill: fills[up] });
    }
    return { data: data, bands: bands };
  }

  /**
   * A stacked area chart over time: spec as chart(), plus x, names, values (raw, one array
   * per name), colours, f (value format), yLabel, range. Toggling a series restacks the rest.
   */
  function stacked(parent, spec) {
    const raw = [spec.x].concat(spec.values);
    const fills = [null].concat(spec.colours.map((c) => c + "99"));
    const first = stack(raw, fills, () => false);
    const series = [xTime].concat(
      spec.names.map((name, k) =>
        line(name, spec.colours[k], spec.f, {
          fill: fills[k + 1],
          width: 1,
          value: (u, v, si, i) => (i == null ? dash : spec.f(raw[si][i])),
        })
      )
    );
    return chart(parent, {
      id: spec.id,
      title: spec.title,
      aria: spec.aria,
      note: spec.note,
      time: true,
      data: first.data,
      opts: {
        series: series,
        bands: first.bands,
        scales: { y: { range: spec.range || fromZero } },
        axes: [axis("time (s)"), axis(spec.yLabel)],
        plugins: spec.plugins || [],
        hooks: {
          setSeries: [
            (u) => {
              const again = stack(raw, fills, (s) => !u.series[s].show);
              u.delBand(null);
              again.bands.forEach((b) => u.addBand(b));
              u.setData(again.data);
            },
          ],
        },
      },
    });
  }

  /**
   * A bar chart over categories: spec as chart(), plus cats (labels), series [{label,
   * colour, values}], f (value format), xLabel, yLabel; sideBySide: two series drawn next to
   * each other at each category (otherwise they should not share categories).
   */
  function bars(parent, spec) {
    const xs = spec.cats.map((_, i) => i);
    const two = !!spec.sideBySide && spec.series.length === 2;
    const series = [{ label: spec.xLabel, value: (u, v) => (finite(v) ? spec.cats[Math.round(v)] : dash) }].concat(
      spec.series.map((s, k) => ({
        label: s.label,
        stroke: s.colour,
        fill: s.colour + "CC",
        width: 1,
        paths: uPlot.paths.bars({ size: [two ? 0.38 : 0.6, 90], align: two ? (k === 0 ? -1 : 1) : 0 }),
        points: { show: false },
        value: (u, v) => spec.f(v),
      }))
    );
    const labelled = (u, splits) => splits.map((i) => (Number.isInteger(i) && spec.cats[i] != null ? spec.cats[i] : ""));
    return chart(parent, {
      id: spec.id,
      title: spec.title,
      aria: spec.aria,
      note: spec.note,
      small: spec.small,
      height: spec.height,
      data: [xs].concat(spec.series.map((s) => s.values)),
      opts: {
        series: series,
        scales: { x: { range: [-0.5, spec.cats.length - 0.5] }, y: { range: fromZero } },
        axes: [
          axis(spec.xLabel, null, { splits: () => xs, values: labelled, size: 40, gap: 4 }),
          axis(spec.yLabel),
        ],
        cursor: { drag: { x: false, y: false } },
      },
    });
  }

  // ---- a run ---------------------------------------------------------------------------

  const hasValues = (a) => Array.isArray(a) && a.some(finite);
  const mapKeys = (m) => Object.keys(m || {});

  function runPage(d) {
    const S = d.summary;
    const T = d.series || { t: [] };
    const n = (T.t || []).length;
    // An interval's values are drawn at its middle: [10 s, 11 s) at 10.5 s.
    const X = n ? T.t.map((t, i) => t + T.length_s[i] / 2) : [];
    const ends = [S.duration ? S.duration.total_s : 0];
    if (n) ends.push(T.t[n - 1] + T.length_s[n - 1]);
    if (d.scatter && d.scatter.length) ends.push(d.scatter[d.scatter.length - 1][0]);
    timeSpan = [0, Math.max(...ends.filter(finite))];
    // A failed command is marked as such: nothing after it is its doing.
    const failed = (e) => (e.failed ? " (failed" + (e.exit === null ? "" : ", exit " + e.exit) + ")" : "");
    const events = (S.events || []).map((e, i) => ({ at: e.at_s, label: i + 1 + ": " + e.command + failed(e) }));
    // A stepped run marks where each step starts, as in the steps table below the charts.
    const steps = (S.steps || []).length >= 2
      ? S.steps.map((st, i) => ({ at: st.start_s, label: "step " + (i + 1) + ": " + st.label, colour: OI.grey, dash: [2, 3] }))
      : [];
    const markers = () => [linesPlugin(events.concat(steps), [])];
    const eventNote =
      [
        events.length ? "Dashed lines: the events (numbered as in the list above)." : "",
        steps.length ? "Dotted grey lines: the start of each step (see the steps table)." : "",
      ].join(" ").trim() || null;
    const done = n ? T.ok.map((ok, i) => ok + T.errors[i]) : [];
    const whenDone = (col) => (col || []).map((v, i) => (done[i] > 0 ? v : null));

    const sp = d.spectrum || {};
    const corrected = sp.corrected || { nines: [], ms: [] };
    const service = sp.service || { nines: [], ms: [] };
    const hasScatter = d.scatter && d.scatter.length > 0;
    const hasSpectrum = corrected.nines.length > 0 || service.nines.length > 0;
    const latencyGrid = n || hasScatter || hasSpectrum ? section("Latency") : null;
    // With trace context: the p99 of each interval that kept exemplars, ringed.
    const ex = T.exemplars || [];
    const traced = whenDone(T.p99_ms).map((v, i) => (ex[i] && ex[i].length ? v : null));
    const hasTraces = traced.some(finite);
    if (n) {
      const tracedSeries = Object.assign(dots("p99 traced", OI.orange, fmt.ms), {
        fill: "#ffffff",
        points: { show: true, size: 11, width: 2, stroke: OI.black, fill: "rgba(255, 255, 255, 0)" },
        value: (u, v, si, i) => (i != null && ex[i] && ex[i].length ? "slowest traced " + fmt.ms(ex[i][0][0]) : dash),
      });
      chart(latencyGrid, {
        id: "latency",
        title: "Latency over time",
        aria:
          "Line chart: corrected latency p50, p90, p99 and max, and service time p50 and p99, in milliseconds, per interval over the run" +
          (hasTraces ? "; ringed p99 points have traces of their slowest sampled requests, listed under the chart" : ""),
        note:
          "Corrected latency counts from when each request was due (free of coordinated omission); service time from when it was sent. Each interval is drawn at its middle. " +
          (hasTraces ? "Ringed p99 points: intervals with traced requests (hover or click one). " : "") +
          (eventNote || ""),
        time: true,
        data: [
          X,
          whenDone(T.p50_ms),
          whenDone(T.p90_ms),
          whenDone(T.p99_ms),
          whenDone(T.max_ms),
          whenDone(T.service_p50_ms),
          whenDone(T.service_p99_ms),
        ].concat(hasTraces ? [traced] : []),
        opts: {
          series: [
            xTime,
            line("p50", OI.blue, fmt.ms),
            line("p90", OI.sky, fmt.ms),
            line("p99", OI.orange, fmt.ms),
            line("max", OI.vermillion, fmt.ms, { width: 1 }),
            line("service p50", OI.green, fmt.ms, { dash: [6, 4] }),
            line("service p99", OI.purple, fmt.ms, { dash: [6, 4] }),
          ].concat(hasTraces ? [tracedSeries] : []),
          scales: { y: { range: fromZero } },
          axes: [axis("time (s)"), axis("latency (ms)")],
          plugins: markers().concat(hasTraces ? [exemplarsPlugin(ex, T)] : []),
        },
      });
    }
    if (hasScatter) {
      chart(latencyGrid, {
        id: "scatter",
        title: "Sampled requests",
        aria: "Scatter plot: the corrected latency in milliseconds of " + d.scatter.length + " sampled requests against the time they ended, successes and failures in different colours",
        note: "A sample of the requests (the first few of each tenth of a second, failures kept first), by the time they ended.",
        time: true,
        data: [
          d.scatter.map((p) => p[0]),
          d.scatter.map((p) => (p[2] ? p[1] : null)),
          d.scatter.map((p) => (p[2] ? null : p[1])),
        ],
        opts: {
          series: [xTime, dots("succeeded", OI.blue, fmt.ms), dots("failed", OI.vermillion, fmt.ms)],
          scales: { y: { range: fromZero } },
          axes: [axis("time (s)"), axis("latency (ms)")],
          plugins: markers(),
        },
      });
    }
    if (hasSpectrum) {
      distribution(latencyGrid, "distribution", [
        { label: "corrected", colour: OI.blue, nines: corrected.nines, ms: corrected.ms },
        { label: "service", colour: OI.orange, nines: service.nines, ms: service.ms, dash: [6, 4] },
      ]);
    }

    if (n) {
      const grid = section("Throughput");
      const perSec = (col) => col.map((v, i) => (v != null && T.length_s[i] > 0 ? v / T.length_s[i] : null));
      // What the schedule asked for, beside what was sent: a lost shard's gap shows.
      const due = T.due && T.due.some((v) => v != null) ? [perSec(T.due)] : [];
      chart(grid, {
        id: "throughput",
        title: "Throughput over time",
        aria: "Line chart: requests due (when the schedule lists them), sent, succeeded and failed per second, and the error rate in percent, per interval over the run",
        note: eventNote,
        time: true,
        data: [
          X,
          ...due,
          perSec(T.sent),
          perSec(T.ok),
          perSec(T.errors),
          T.errors.map((e, i) => (done[i] > 0 ? (100 * e) / done[i] : null)),
        ],
        opts: {
          series: [
            xTime,
            ...due.map(() => line("due", OI.grey, fmt.rate, { dash: [2, 3] })),
            line("sent", OI.sky, fmt.rate),
            line("succeeded", OI.green, fmt.rate, { width: 2 }),
            line("failed", OI.vermillion, fmt.rate),
            line("error rate", OI.purple, fmt.pct, { scale: "pct", dash: [4, 3] }),
          ],
          scales: { y: { range: fromZero }, pct: { range: (u, min, max) => [0, Math.max(1, Math.min(100, max * 1.1))] } },
          axes: [
            axis("time (s)"),
            axis("requests per second"),
            axis("error rate (%)", null, { scale: "pct", side: 1, grid: { show: false } }),
          ],
          plugins: markers(),
        },
      });
    }

    // Phases: stacked over time, and the whole run.
    const phaseCols = T.phase_mean_ms || {};
    const phaseNames = PHASES.filter((p) => hasValues(phaseCols[p])).concat(
      mapKeys(phaseCols).filter((p) => PHASES.indexOf(p) < 0 && hasValues(phaseCols[p]))
    );
    const runPhases = PHASES.filter((p) => S.phases && S.phases[p] && S.phases[p].count > 0).concat(
      mapKeys(S.phases).filter((p) => PHASES.indexOf(p) < 0 && S.phases[p].count > 0)
    );
    if ((n && phaseNames.length) || runPhases.length) {
      const grid = section("Phases");
      if (n && phaseNames.length) {
        stacked(grid, {
          id: "phases",
          title: "Request phases over time",
          aria: "Stacked area chart: the mean time of each phase of a request (" + phaseNames.join(", ") + ") in milliseconds, per interval",
          note: "Each layer is the mean of a phase over the requests in which it happened (a connect only on new connections).",
          x: X,
          names: phaseNames,
          values: phaseNames.map((p) => phaseCols[p]),
          colours: phaseNames.map((p, k) => PHASE_COLOURS[p] || CYCLE[k % CYCLE.length]),
          f: fmt.ms,
          yLabel: "mean time (ms)",
          plugins: markers(),
        });
      }
      if (runPhases.length) {
        // Per request beside the mean where it happened: 4 TLS handshakes in 4,080 requests
        // have a large mean and cost each request little.
        const finished = S.requests ? S.requests.total : 0;
        bars(grid, {
          id: "phases-run",
          title: "Request phases over the whole run",
          aria: "Bar chart: for each phase of a request (" + runPhases.join(", ") + "), its total time divided by all " + finished + " finished requests, and its mean over the requests in which it happened, in milliseconds",
          note: "Per request: the phase's total time over all " + fmt.count(finished) + " finished requests, what it cost the average request. Mean where it happened: over the requests in which it happened (× under each phase).",
          cats: runPhases.map((p) => p + " ×" + fmt.count(S.phases[p].count)),
          series: [
            { label: "per request", colour: OI.blue, values: runPhases.map((p) => S.phases[p].per_request_us / 1000) },
            { label: "mean where it happened", colour: OI.orange, values: runPhases.map((p) => S.phases[p].mean_us / 1000) },
          ],
          sideBySide: true,
          f: fmt.ms,
          xLabel: "phase (× times it happened)",
          yLabel: "time (ms)",
          height: 240,
        });
      }
    }

    // Status codes and error kinds.
    const codes = mapKeys(S.status_codes).sort((a, b) => a - b);
    const kinds = S.errors || [];
    if (codes.length || kinds.length) {
      const grid = section("Responses and errors");
      const cats = codes.map((c) => (c === "0" ? "other" : c)).concat(kinds.map((e) => e.kind));
      const good = (c) => +c >= 100 && +c < 400;
      const pad = (values) => values.concat(new Array(cats.length - values.length).fill(null));
      const series = [
        { label: "1xx–3xx", colour: OI.green, values: pad(codes.map((c) => (good(c) ? S.status_codes[c] : null))) },
        { label: "4xx/5xx", colour: OI.orange, values: pad(codes.map((c) => (good(c) ? null : S.status_codes[c]))) },
        {
          label: "errors (no response)",
          colour: OI.vermillion,
          values: codes.map(() => null).concat(kinds.map((e) => e.count)),
        },
      ].filter((s) => hasValues(s.values));
      bars(grid, {
        id: "status",
        title: "Status codes and error kinds",
        aria: "Bar chart: responses per status code (" + codes.join(", ") + ") and failed requests per error kind (" + (kinds.map((e) => e.kind).join(", ") || "none") + ")",
        cats: cats,
        series: series,
        f: fmt.count,
        xLabel: "status or error",
        yLabel: "requests",
        height: 260,
      });
    }

    // Cache.
    if (S.cache) {
      const c = S.cache;
      const showRatio = n && (hasValues(T.hit_ratio) || hasValues(T.byte_hit_ratio));
      const sides = [
        ["hit", c.hit, OI.green],
        ["miss", c.miss, OI.orange],
      ].filter((s) => s[1] && s[1].latency && s[1].latency.count > 0);
      if (showRatio || sides.length) {
        const grid = section("Cache");
        if (showRatio) {
          const pct = (col) => (col || []).map((v) => (finite(v) ? v * 100 : null));
          chart(grid, {
            id: "cache-ratio",
            title: "Cache hit ratio over time",
            aria: "Line chart: the share of responses and of response bytes served from a cache, in percent, per interval",
            note: "Over the responses with a recognised cache header (" + fmt.count(c.classified) + " in the run).",
            time: true,
            data: [X, pct(T.hit_ratio), pct(T.byte_hit_ratio)],
            opts: {
              series: [xTime, line("hit ratio", OI.green, fmt.pct, { width: 2 }), line("byte hit ratio", OI.blue, fmt.pct, { dash: [6, 4] })],
              scales: { y: { range: [0, 100] } },
              axes: [axis("time (s)"), axis("served from cache (%)")],
              plugins: markers(),
            },
          });
        }
        if (sides.length) {
          bars(grid, {
            id: "cache-latency",
            title: "Latency of cache hits and misses",
            aria: "Bar chart: corrected latency p50 and p99 in milliseconds of responses served from the cache (hits) and fetched from the origin (misses)",
            cats: ["p50", "p90", "p99"],
            series: sides.map((s) => ({
              label: s[0] + " (" + fmt.count(s[1].latency.count) + ")",
              colour: s[2],
              values: [s[1].latency.p50_us / 1000, s[1].latency.p90_us / 1000, s[1].latency.p99_us / 1000],
            })),
            sideBySide: true,
            f: fmt.ms,
            xLabel: "percentile",
            yLabel: "latency (ms)",
            height: 240,
          });
        }
      }
    }

    // Backends.
    const backendNames = (S.backends || []).map((b) => b.name).filter((b) => T.backends && T.backends[b]);
    if (n && backendNames.length >= 2) {
      const grid = section("Backends");
      const totals = T.t.map((_, i) => backendNames.reduce((a, b) => a + (T.backends[b][i] || 0), 0));
      stacked(grid, {
        id: "backends",
        title: "Share of responses per backend over time",
        aria: "Stacked area chart: each backend's share in percent of the responses of each interval: " + backendNames.join(", "),
        note: "From the backend header of each response. " + (eventNote || ""),
        x: X,
        names: backendNames,
        values: backendNames.map((b) => T.backends[b].map((v, i) => (totals[i] > 0 ? (100 * (v || 0)) / totals[i] : null))),
        colours: backendNames.map((b, k) => CYCLE[k % CYCLE.length]),
        f: fmt.pct,
        yLabel: "share of responses (%)",
        range: [0, 100],
        plugins: markers(),
      });
    }

    // Watched processes and barrage.
    if (S.host && n) {
      const cpu = T.cpu_percent || {};
      const rss = T.rss_kib || {};
      const cpuNames = mapKeys(cpu).filter((k) => hasValues(cpu[k]));
      const rssNames = mapKeys(rss).filter((k) => hasValues(rss[k]));
      if (cpuNames.length || rssNames.length) {
        const grid = section("Processes");
        const order = (names) => names.filter((k) => k !== "barrage").concat(names.filter((k) => k === "barrage"));
        if (cpuNames.length) {
          const names = order(cpuNames);
          chart(grid, {
            id: "cpu",
            title: "CPU over time",
            aria: "Line chart: CPU use in percent of one core per interval of " + names.join(", "),
            note: "100 % is one core busy. The machine (" + S.host.cpus + " CPUs) was " + fmt.pct(S.host.cpu_mean_percent) + " busy on average.",
            time: true,
            data: [X].concat(names.map((k) => cpu[k])),
            opts: {
              series: [xTime].concat(names.map((k, i) => line(k, k === "barrage" ? OI.black : CYCLE[i % CYCLE.length], fmt.pct, k === "barrage" ? { dash: [6, 4] } : {}))),
              scales: { y: { range: fromZero } },
              axes: [axis("time (s)"), axis("CPU (% of one core)")],
              plugins: markers(),
            },
          });
        }
        if (rssNames.length) {
          const names = order(rssNames);
          chart(grid, {
            id: "memory",
            title: "Memory over time",
            aria: "Line chart: resident memory in MiB per interval of " + names.join(", "),
            time: true,
            data: [X].concat(names.map((k) => rss[k].map((v) => (finite(v) ? v / 1024 : null)))),
            opts: {
              series: [xTime].concat(names.map((k, i) => line(k, k === "barrage" ? OI.black : CYCLE[i % CYCLE.length], fmt.mib, k === "barrage" ? { dash: [6, 4] } : {}))),
              scales: { y: { range: fromZero } },
              axes: [axis("time (s)"), axis("resident memory (MiB)")],
              plugins: markers(),
            },
          });
        }
      }
    }
  }

  /** The percentile spectrum of one or more runs: x in nines, y latency on a log scale. */
  function distribution(grid, id, runs, title) {
    const shown = runs.filter((r) => r.nines.length);
    const data = align(
      shown.map((r) => r.nines),
      shown.map((r) => r.ms.map((v) => (v > 0 ? v : null)))
    );
    const [lo, hi] = [data[0][0], data[0][data[0].length - 1]];
    const maxNines = Math.max(1, Math.ceil(hi - 1e-9));
    chart(grid, {
      id: id,
      title: title || "Latency distribution",
      aria: "Line chart: latency in milliseconds on a logarithmic scale at each percentile, the percentiles on a scale of nines (90%, 99%, 99.9%, …), of " + shown.map((r) => r.label).join(", "),
      note: "The whole run's percentile spectrum: each step right is ten times rarer (90 %, 99 %, 99.9 %…). The maximum is not drawn (100 % is infinitely far right).",
      data: data,
      opts: {
        series: [{ label: "percentile", value: (u, v) => (finite(v) ? ninesLabel(v, 2) : dash) }].concat(
          shown.map((r) => line(r.label, r.colour, fmt.ms, { spanGaps: true, dash: r.dash }))
        ),
        scales: {
          // Zoomed out: from 0% to the next whole nine; zoomed in: the selection.
          x: { range: (u, min, max) => (min <= lo && max >= hi ? [0, maxNines] : [min, max]) },
          y: { distr: 3, log: 10 },
        },
        axes: [
          axis("percentile", null, {
            // A tick per whole nine, fewer when they would not fit (one per 90 px).
            splits: (u, ai, min, max) => {
              const from = Math.ceil(min);
              const count = Math.floor(max) - from + 1;
              const step = Math.max(1, Math.ceil(count / Math.max(2, u.bbox.width / uPlot.pxRatio / 90)));
              const s = [];
              for (let k = from; k <= max; k += step) s.push(k);
              return s.length >= 2 ? s : [min, (min + max) / 2, max];
            },
            values: (u, splits) => splits.map((v) => ninesLabel(v)),
          }),
          axis("latency (ms, log scale)"),
        ],
      },
    });
  }

  // ---- a sweep or a capacity search -----------------------------------------------------

  function curvePage(d) {
    const sh = d.sheet;
    const col = (name) => sh.header.indexOf(name);
    const xi = col(d.x);
    if (xi < 0) return;
    const rows = sh.rows.filter((r) => finite(r[xi])).sort((a, b) => a[xi] - b[xi]);
    if (!rows.length) return;
    const xs = rows.map((r) => r[xi]);
    const get = (name) => {
      const i = col(name);
      return i < 0 ? null : rows.map((r) => (finite(r[i]) ? r[i] : null));
    };
    const xLabel = d.x === "rate_per_sec" ? "offered rate (requests/s)" : d.x === "offered" ? "offered load (requests/s or workers)" : d.x;
    const xSeries = { label: d.x === "rate_per_sec" ? "rate" : "offered", value: (u, v) => fmt.num(v) };
    const vertical = [];
    if (finite(d.knee)) vertical.push({ at: d.knee, label: "knee " + fmt.num(d.knee), colour: OI.purple });
    if (finite(d.capacity)) vertical.push({ at: d.capacity, label: "capacity " + fmt.num(d.capacity), colour: OI.black });
    const slos = (d.slo_ms || []).map((s) => ({ at: s.ms, label: "objective " + s.label + " " + fmt.ms(s.ms), colour: OI.vermillion }));
    const marks = vertical.length || slos.length ? "Dashed lines: " + [vertical.length ? "the knee or capacity found" : null, slos.length ? "the latency objectives" : null].filter(Boolean).join(" and ") + "." : null;
    const point = { show: true, size: 6 };

    const grid = section("Load and response");
    const latency = [
      ["p50", get("p50_ms"), OI.blue],
      ["p90", get("p90_ms"), OI.sky],
      ["p99", get("p99_ms"), OI.orange],
    ].filter((s) => hasValues(s[1]));
    if (latency.length) {
      const sloMax = Math.max(0, ...slos.map((s) => s.at));
      chart(grid, {
        id: "curve-latency",
        title: "Latency against load",
        aria: "Line chart: corrected latency " + latency.map((s) => s[0]).join(", ") + " in milliseconds against the " + xLabel,
        note: marks,
        data: [xs].concat(latency.map((s) => s[1])),
        opts: {
          series: [xSeries].concat(latency.map((s) => line(s[0], s[2], fmt.ms, { points: point, spanGaps: true }))),
          scales: { y: { range: (u, min, max) => [0, uPlot.rangeNum(0, Math.max(max, sloMax * 1.05, 1e-3), 0.1, true)[1]] } },
          axes: [axis(xLabel), axis("latency (ms)")],
          plugins: [linesPlugin(vertical, slos)],
        },
      });
    }
    const tput = get("throughput_per_sec");
    if (hasValues(tput)) {
      chart(grid, {
        id: "curve-throughput",
        title: "Throughput against load",
        aria: "Line chart: successful responses per second against the " + xLabel,
        note: vertical.length ? marks : null,
        data: [xs, tput],
        opts: {
          series: [xSeries, line("throughput", OI.green, fmt.rate, { points: point, width: 2, spanGaps: true })],
          scales: { y: { range: fromZero } },
          axes: [axis(xLabel), axis("successes per second")],
          plugins: [linesPlugin(vertical, [])],
        },
      });
    }
    const success = get("success_percent");
    const errs = get("errors");
    if (hasValues(success) || hasValues(errs)) {
      const series = [xSeries];
      const data = [xs];
      if (hasValues(success)) {
        series.push(line("success", OI.green, fmt.pct, { points: point, spanGaps: true }));
        data.push(success);
      }
      if (hasValues(errs)) {
        series.push(line("failed requests", OI.vermillion, fmt.count, { points: point, spanGaps: true, scale: "n", dash: [6, 4] }));
        data.push(errs);
      }
      chart(grid, {
        id: "curve-errors",
        title: "Success and failures against load",
        aria: "Line chart: the share of successful requests in percent and the number of failed requests against the " + xLabel,
        data: data,
        opts: {
          series: series,
          scales: { y: { range: [0, 100] }, n: { range: fromZero } },
          axes: [axis(xLabel), axis("success (%)"), axis("failed requests", null, { scale: "n", side: 1, grid: { show: false } })],
          plugins: [linesPlugin(vertical, [])],
        },
      });
    }
  }

  // ---- runs compared --------------------------------------------------------------------

  function comparePage(d) {
    const runs = d.runs || [];
    if (!runs.length) return;
    const colour = (k) => CYCLE[k % CYCLE.length];
    const grid = section("Latency");
    if (runs.some((r) => r.spectrum && r.spectrum.corrected.nines.length)) {
      distribution(
        grid,
        "compare-distribution",
        runs.map((r, k) => ({ label: r.label, colour: colour(k), nines: r.spectrum.corrected.nines, ms: r.spectrum.corrected.ms })),
        "Latency distribution (corrected)"
      );
    }
    const withSeries = runs.filter((r) => r.series && r.series.t.length);
    if (withSeries.length) {
      const xs = withSeries.map((r) => r.series.t.map((t, i) => t + r.series.length_s[i] / 2));
      timeSpan = [0, Math.max(...withSeries.map((r) => r.series.t[r.series.t.length - 1] + r.series.length_s[r.series.t.length - 1]))];
      const done = (r) => r.series.ok.map((ok, i) => ok + r.series.errors[i]);
      const p99 = align(xs, withSeries.map((r) => {
        const n = done(r);
        return r.series.p99_ms.map((v, i) => (n[i] > 0 ? v : null));
      }));
      const tput = align(xs, withSeries.map((r) => r.series.ok.map((v, i) => (r.series.length_s[i] > 0 ? v / r.series.length_s[i] : null))));
      const labels = withSeries.map((r) => r.label);
      const ks = withSeries.map((r) => runs.indexOf(r));
      chart(grid, {
        id: "compare-p99",
        title: "p99 latency over time",
        aria: "Line chart: corrected latency p99 in milliseconds per interval of " + labels.join(", "),
        note: "Time from each run's own start; each interval drawn at its middle.",
        time: true,
        data: p99,
        opts: {
          series: [xTime].concat(labels.map((l, i) => line(l, colour(ks[i]), fmt.ms))),
          scales: { y: { range: fromZero } },
          axes: [axis("time (s)"), axis("latency p99 (ms)")],
        },
      });
      const grid2 = section("Throughput");
      chart(grid2, {
        id: "compare-throughput",
        title: "Throughput over time",
        aria: "Line chart: successful responses per second per interval of " + labels.join(", "),
        time: true,
        data: tput,
        opts: {
          series: [xTime].concat(labels.map((l, i) => line(l, colour(ks[i]), fmt.rate))),
          scales: { y: { range: fromZero } },
          axes: [axis("time (s)"), axis("successes per second")],
        },
      });
    }
  }

  // ---- an experiment --------------------------------------------------------------------

  function experimentPage(d) {
    const m = d.matrix;
    const ci = m.header.indexOf("case");
    if (ci < 0 || !m.rows.length) return;
    const cats = m.rows.map((r) => String(r[ci]));
    const metrics = [
      ["throughput_per_sec", "Throughput", "successes per second", fmt.rate, OI.green],
      ["p50_ms", "p50 latency", "latency p50 (ms)", fmt.ms, OI.blue],
      ["p99_ms", "p99 latency", "latency p99 (ms)", fmt.ms, OI.orange],
    ].filter((x) => m.header.indexOf(x[0]) >= 0);
    if (!metrics.length) return;
    const grid = section("Cases side by side", true);
    for (const [name, title, yLabel, f, colour] of metrics) {
      const i = m.header.indexOf(name);
      const values = m.rows.map((r) => (finite(r[i]) ? r[i] : null));
      if (!hasValues(values)) continue;
      bars(grid, {
        id: "exp-" + name,
        title: title + " per case",
        aria: "Bar chart: " + yLabel + " of each case: " + cats.join(", "),
        cats: cats,
        series: [{ label: title, colour: colour, values: values }],
        f: f,
        xLabel: "case",
        yLabel: yLabel,
        small: true,
      });
    }
  }

  function trendPage(d) {
    const grid = section("Over the runs");
    d.series.forEach((c, k) => {
      const sh = c.sheet;
      const vi = sh.header.indexOf(c.column);
      if (vi < 0 || !sh.rows.length) return;
      const xs = sh.rows.map((r, i) => i + 1);
      const ys = sh.rows.map((r) => (finite(r[vi]) ? r[vi] : null));
      const ms = /_ms$/.test(c.column);
      const f = ms ? fmt.ms : fmt.num;
      const marks = c.changes
        .map((ch) => ({ at: ch.row + 1, label: ch.label, colour: OI.vermillion }))
        .concat((c.notes || []).map((n) => ({ at: n.at + 1, label: n.label, colour: OI.purple, dash: [2, 3] })));
      chart(grid, {
        id: "trend-" + k,
        title: c.title,
        aria: "Line chart: " + c.column + " of each run of the series, oldest first",
        note: marks.length ? "Dashed lines: change points; dotted: notes." : null,
        data: [xs, ys],
        opts: {
          series: [{ label: "run", value: (u, v) => (v == null ? "" : String(sh.rows[v - 1][0])) }, line(d.figure, OI.blue, f, { points: { show: true, size: 5 }, spanGaps: true })],
          scales: { y: { range: fromZero } },
          axes: [axis("run of the series (oldest first)"), axis(c.column)],
          plugins: [linesPlugin(marks, [])],
        },
      });
    });
  }

  // ---- start ---------------------------------------------------------------------------

  function resize() {
    for (const id of Object.keys(charts)) {
      const c = charts[id];
      const width = Math.max(240, c.plot.clientWidth || 0);
      if (Math.abs(width - c.u.width) > 1) c.u.setSize({ width: width, height: c.height });
    }
  }

  function main() {
    try {
      const data = JSON.parse(document.getElementById("barrage-data").textContent);
      const pages = { run: runPage, curve: curvePage, compare: comparePage, experiment: experimentPage, trend: trendPage, table: function () {} };
      if (!pages[data.page]) throw new Error("unknown page kind " + data.page);
      pages[data.page](data);
    } catch (e) {
      errors.push("report.js: " + ((e && e.stack) || e));
    }
    flush();
    // uPlot draws in a microtask: count the draws once they happened.
    setTimeout(flush, 0);
    let pending = null;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(resize, 100);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
