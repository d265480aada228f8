// A new tab fetches plotly.js's cartesian bundle at once (a preload: off the main thread) and
// evaluates it once the app's first run has started, at most 10 s on: the browser then waits for
// the server, and the figures the run sends find it ready (vitviz.app.chart_script.EarlyCharts).
// vitviz's chart element (chart.js) draws with it: both keep it in window.vitvizPlotly under its
// path, so it is evaluated once.
(() => {
  const entry = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!entry) return;
  const url = new URL("../../" + {script}, entry.src).href;
  const link = document.createElement("link");
  link.rel = "preload";
  link.as = "script";
  link.href = url;
  document.head.appendChild(link);
  const started = Date.now();
  const wait = () => {
    window.vitvizPlotly = window.vitvizPlotly || {};
    if (window.vitvizPlotly[{script}]) return; // a figure came first and loads it
    const app = document.querySelector("{app_root}");
    if ((app && app.getAttribute("data-test-script-state") === "running") || Date.now() - started > 10000) {
      window.vitvizPlotly[{script}] = new Promise((resolve, reject) => {
        const tag = document.createElement("script");
        tag.src = url;
        tag.onload = () => resolve(window.Plotly);
        tag.onerror = () => reject(new Error("plotly.js did not load"));
        document.head.appendChild(tag);
      });
    } else setTimeout(wait, 25);
  };
  wait();
})();
