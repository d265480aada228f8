// A new tab fetches what its first runs will need before they ask (vitviz.app.chart_script.EarlyCharts):
// - plotly.js's cartesian bundle at once (a preload: off the main thread), evaluated once the app's
//   first run has started, at most 10 s on: the browser then waits for the server, and the figures
//   the run sends find it ready. vitviz's chart element (chart.js) draws with it: both keep it in
//   window.vitvizPlotly under its path, so it is evaluated once.
// - the chunks of Streamlit's frontend that the first view's elements need, as the run starts (not
//   before: the page's own requests come first), and those of the sidebar's widgets and the steps
//   once that run has ended and the browser is idle. Fetched when the first view's run had drawn,
//   they waited for a server busy loading the libraries (docs/benchmarks.md).
(() => {
  const entry = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!entry) return;
  const at = (path) => new URL("../../" + path, entry.src).href; // a path relative to the app's root
  const url = at({script});
  const link = document.createElement("link");
  link.rel = "preload";
  link.as = "script";
  link.href = url;
  document.head.appendChild(link);
  const preload = (paths) => {
    for (const path of paths) {
      const chunk = document.createElement("link");
      chunk.rel = "modulepreload";
      chunk.crossOrigin = "anonymous";
      chunk.href = at(path);
      document.head.appendChild(chunk);
    }
  };
  const started = Date.now();
  let ran = false;
  const wait = () => {
    const app = document.querySelector("{app_root}");
    const running = app && app.getAttribute("data-test-script-state") === "running";
    if (!ran && (running || Date.now() - started > 10000)) {
      ran = true;
      preload({first_chunks});
      window.vitvizPlotly = window.vitvizPlotly || {};
      if (!window.vitvizPlotly[{script}]) { // else a figure came first and loads it
        window.vitvizPlotly[{script}] = new Promise((resolve, reject) => {
          const tag = document.createElement("script");
          tag.src = url;
          tag.onload = () => resolve(window.Plotly);
          tag.onerror = () => reject(new Error("plotly.js did not load"));
          document.head.appendChild(tag);
        });
      }
    }
    if (ran && !running) {
      (window.requestIdleCallback || setTimeout)(() => preload({later_chunks}), { timeout: 2000 });
    } else setTimeout(wait, 25);
  };
  wait();
})();
