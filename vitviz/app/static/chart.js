// One figure of the app (vitviz.app.charts.draw), drawn by plotly.js once. Streamlit's own chart
// element drew every figure three times: once, again when its theme effect copied the figure, and
// again when it set the width (docs/benchmarks.md). Here a figure is drawn when it arrives, and
// again only when its box changes size or the server sends another figure under its key.
//
// A figure in the window is drawn at once; one outside it (below the first screen, in a closed
// expander) once the browser is idle, the moment it is scrolled into the window, or before the page
// is printed: the figures a class sees are drawn and shown first, and the rest wait for the frames
// between (docs/benchmarks.md). A figure waiting so has data-waiting; a drawn one data-drawn.
//
// A figure whose axes, colour bar or legend need more room than its layout's margins is drawn twice:
// plotly.js measures what its labels need while it draws, then draws again with the margins grown
// (its automargin). Step 5 seen again with margins wide enough for every figure took 0.14-0.22 s
// less of its 0.73-0.76 s (docs/benchmarks.md). The browser remembers, for each figure's key,
// language and size, the margins the last figure drawn under it ended with, and a figure drawn
// again under them (another layer, head or image, the step seen again, the page loaded again: the
// newest 400 are kept in its local storage) starts from them: drawn once, where its labels fit.
// A figure it has not drawn starts from the margins Chromium drew it with when the app was made
// (tools.margins: another image or model may need other labels). A figure that needs more still
// grows; one that needs less keeps the room, a few pixels.
//
// data (bytes: vitviz.app.chart_script.element_data): a line of JSON with script (plotly.js, relative
// to the app's root), stretch (as tall as its box: a slide's figures), select (a click is sent
// to the server as the trigger "selection": {points: [{curve_number, point_number, point_index, x,
// y, customdata}]}), key (the element's), lang (the session's) and start (the margins Chromium
// measured for it on a first visit, by width: vitviz.app.margins.measured), then the
// figure's plotly JSON as text.

const FALLBACK_WIDTH = 600; // a box not laid out yet (a closed expander): drawn, then resized
const FALLBACK_HEIGHT = 450; // Streamlit's height for a figure that names none
const IDLE_WAIT_MS = 1500; // a figure out of the window is drawn by then, idle or not
const BATCH_MS = 40; // figures out of the window drawn one after another, for at most this long at a time
const SIDES = ["l", "r", "t", "b"];
const DEFAULT_MARGIN = { l: 80, r: 80, t: 100, b: 80 }; // plotly.js's, for a side a layout leaves out
const STORED = "vitviz-margins-1"; // the margins kept in the browser's storage, for the page loaded again
const STORED_MAX = 400; // figure keys and sizes kept there (the newest; a few kB)
const MAX_MARGIN = 2000; // pixels: a stored side past this is not a margin the app drew
const margins = stored(); // "key|language|width|height" -> {l, r, t, b} the last figure under it was drawn with

function stored() {
  // the margins this browser's earlier pages of the app ended with (none where storage is off)
  try {
    const entries = JSON.parse(window.localStorage.getItem(STORED) || "[]");
    return new Map(Array.isArray(entries) ? entries.filter(valid) : []);
  } catch {
    return new Map();
  }
}

function valid(entry) {
  const sane = (value) => Number.isFinite(value) && value >= 0 && value <= MAX_MARGIN;
  return Array.isArray(entry) && typeof entry[0] === "string" && SIDES.every((side) => sane(entry[1]?.[side]));
}

function store() {
  try {
    window.localStorage.setItem(STORED, JSON.stringify([...margins].slice(-STORED_MAX)));
  } catch {
    // storage full or off: the page still remembers them while it is open
  }
}

function appUrl(path) {
  // relative to the app's root, found from the frontend's entry script (<root>/static/js/index.*.js)
  const entry = document.querySelector('script[type="module"][src*="static/js/index."]');
  return new URL(entry ? "../../" + path : path, entry ? entry.src : document.baseURI).href;
}

function plotly(script) {
  // one load of each plotly.js (the cartesian bundle, the full one) per page, shared with the
  // page's early loader (static/early_charts.js); each resolves to its own Plotly, which it sets
  // as window.Plotly just before its load event
  window.vitvizPlotly = window.vitvizPlotly || {};
  if (!window.vitvizPlotly[script]) {
    window.vitvizPlotly[script] = new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      tag.src = appUrl(script);
      tag.onload = () => resolve(window.Plotly);
      tag.onerror = () => reject(new Error("plotly.js did not load"));
      document.head.appendChild(tag);
    });
  }
  return window.vitvizPlotly[script];
}

function plain(value) {
  // a typed array's row (plotly's customdata) as a plain list, which JSON writes as a list
  return ArrayBuffer.isView(value) ? Array.from(value) : value;
}

function size(div, layout, stretch) {
  const width = Math.round(div.clientWidth) || FALLBACK_WIDTH;
  const height = stretch && div.clientHeight >= 10 ? Math.round(div.clientHeight) : layout.height || FALLBACK_HEIGHT;
  return { width, height };
}

function clicked(div, event) {
  if (!div.vitvizSelect || !div.vitvizSend) return;
  const points = event.points.map((p) => ({
    curve_number: p.curveNumber,
    point_number: plain(p.pointNumber),
    point_index: plain(p.pointIndex),
    x: p.x,
    y: p.y,
    customdata: plain(p.customdata),
  }));
  div.vitvizSend("selection", { points });
}

function resized(Plotly, div) {
  if (!div.isConnected || div.clientWidth === 0) return; // leaving the page, or hidden: nothing to draw
  const now = size(div, div.vitvizLayout, div.vitvizStretch);
  const was = div._fullLayout || {};
  if (now.width !== was.width || now.height !== was.height) Plotly.relayout(div, now);
}

function marginsKey(div, layout) {
  return div.vitvizKey ? `${div.vitvizKey}|${div.vitvizLang}|${layout.width}|${layout.height}` : null;
}

function withKnownMargins(layout, known) {
  // the layout's margins, each side at least what the last figure under this key and size needed
  if (!known) return layout;
  const margin = { ...(layout.margin || {}) };
  for (const side of SIDES) margin[side] = Math.max(margin[side] ?? DEFAULT_MARGIN[side], known[side]);
  return { ...layout, margin };
}

function remember(div, layout) {
  // the margins plotly.js drew with (its _fullLayout._size: this page's own plotly.js, pinned in
  // static/; another version without it is drawn as before)
  const key = marginsKey(div, layout);
  const drawn = div._fullLayout && div._fullLayout._size;
  if (key && drawn && SIDES.every((side) => Number.isFinite(drawn[side]))) {
    margins.delete(key); // the newest last: the oldest leave the storage first
    margins.set(key, Object.fromEntries(SIDES.map((side) => [side, Math.ceil(drawn[side])])));
    store();
  }
}

function measured(start, width) {
  // the margins Chromium measured for this figure on a first visit (vitviz/assets/margins.json), by
  // figure width: each side at least that of the widest width measured not wider than this one (a
  // legend needs fewer rows when wider), and the line through its neighbours' (a colour bar needs
  // a little more room when wider); below the narrowest width measured, the narrowest's
  const entries = (Array.isArray(start) ? start : []).filter(
    (entry) => Array.isArray(entry) && Number.isFinite(entry[0]) && Array.isArray(entry[1]) &&
      entry[1].length === SIDES.length && entry[1].every(Number.isFinite),
  );
  if (!entries.length) return null;
  const wider = entries.findIndex(([w]) => w > width);
  const at = wider === -1 ? entries.length : wider; // entries[at - 1] is the widest not wider
  const lower = entries[Math.max(at - 1, 0)];
  const [a, b] = at === 0 || entries.length === 1 ? [lower, lower] : at === entries.length ? entries.slice(-2) : [entries[at - 1], entries[at]];
  const line = (k) => (a[0] === b[0] ? a[1][k] : a[1][k] + ((b[1][k] - a[1][k]) * (width - a[0])) / (b[0] - a[0]));
  return Object.fromEntries(SIDES.map((side, k) => [side, Math.ceil(Math.max(lower[1][k], line(k)))]));
}

function draw(Plotly, div, figure) {
  const sized = { ...figure.layout, ...size(div, figure.layout, div.vitvizStretch) };
  const known = margins.get(marginsKey(div, sized)) || measured(div.vitvizStart, sized.width);
  const layout = withKnownMargins(sized, known);
  const config = { displaylogo: false, showSendToCloud: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  if (div.vitvizDrawn && div.vitvizPlotly !== Plotly) {
    // another figure under this key that needs the other plotly.js: drawn anew by it
    div.vitvizPlotly.purge(div);
    div.vitvizObserver.disconnect();
    div.vitvizDrawn = false;
  }
  const first = !div.vitvizDrawn;
  div.vitvizDrawn = true;
  div.vitvizPlotly = Plotly;
  div.vitvizLayout = figure.layout;
  const drawn = (first ? Plotly.newPlot : Plotly.react)(div, figure.data, layout, config);
  if (first) {
    // at once, not when the drawing is done: its points can be clicked as soon as they show
    div.on("plotly_click", (event) => clicked(div, event));
    let pending = false;
    div.vitvizObserver = new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        resized(Plotly, div);
      });
    });
    div.vitvizObserver.observe(div);
  }
  return drawn.then(() => {
    remember(div, layout);
    div.dataset.drawn = "1";
  });
}

function read(data) {
  // vitviz.app.chart_script.element_data: a line of JSON (script, stretch, select), then the figure's JSON
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const text = new TextDecoder().decode(bytes);
  const end = text.indexOf("\n");
  return { ...JSON.parse(text.slice(0, end)), spec: text.slice(end + 1) };
}

function idle(callback) {
  // requestIdleCallback, or a short pause where the browser has none (Safari)
  if (window.requestIdleCallback) {
    const id = requestIdleCallback(callback, { timeout: IDLE_WAIT_MS });
    return () => cancelIdleCallback(id);
  }
  const id = setTimeout(callback, 100);
  return () => clearTimeout(id);
}

// The figures waiting for the browser to be idle, in the order they came (the page's order): an
// idle callback draws them one after another while the browser says it is idle, and for BATCH_MS
// at least, then lets a frame through. One figure a callback painted a frame between every two:
// step 5's five figures below the first screen took 176 ms of which 131 ms drawing (docs/benchmarks.md).
const waiting = [];
let draining = false;

function whenIdle(go) {
  waiting.push(go);
  if (!draining) {
    draining = true;
    idle(drain);
  }
  return () => {
    const at = waiting.indexOf(go);
    if (at >= 0) waiting.splice(at, 1);
  };
}

function drain(deadline) {
  draining = false;
  const started = performance.now();
  const idleLeft = () => (deadline && deadline.timeRemaining ? deadline.timeRemaining() : 0);
  while (waiting.length && (idleLeft() > 0 || performance.now() - started < BATCH_MS)) waiting.shift()();
  if (waiting.length) {
    draining = true;
    idle(drain);
  }
}

function whenShown(div, callback) {
  // callback once: at once for a div in the window, else when idle, scrolled into it or printed
  if (div.vitvizWaiting) div.vitvizWaiting();
  let stopIdle = null;
  const seen = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) go();
    else if (!stopIdle) {
      div.dataset.waiting = "1";
      stopIdle = whenIdle(go);
    }
  });
  const stop = () => {
    seen.disconnect();
    if (stopIdle) stopIdle();
    window.removeEventListener("beforeprint", go);
    delete div.dataset.waiting;
    div.vitvizWaiting = null;
  };
  function go() {
    stop();
    callback();
  }
  div.vitvizWaiting = stop;
  window.addEventListener("beforeprint", go);
  seen.observe(div);
}

export default function (component) {
  const { parentElement, setTriggerValue } = component;
  const data = read(component.data);
  const div = parentElement.querySelector(".vitviz-chart");
  div.vitvizSend = setTriggerValue;
  div.vitvizSelect = Boolean(data.select);
  div.vitvizStretch = Boolean(data.stretch);
  div.vitvizKey = data.key || null;
  div.vitvizLang = data.lang || "";
  div.vitvizStart = data.start || null;
  div.classList.toggle("vitviz-chart-stretch", div.vitvizStretch);
  if (div.vitvizSpec === data.spec) return;
  div.vitvizSpec = data.spec;
  delete div.dataset.drawn;
  const figure = JSON.parse(data.spec);
  if (!div.vitvizDrawn && !div.vitvizStretch) {
    // its height kept while it waits: the page below does not move when it is drawn, and a figure
    // below it is not taken to be in the window
    div.style.minHeight = (figure.layout.height || FALLBACK_HEIGHT) + "px";
  }
  plotly(data.script).then((Plotly) => {
    whenShown(div, () => {
      if (div.vitvizSpec === data.spec) draw(Plotly, div, figure).then(() => (div.style.minHeight = ""));
    });
  });
}
