// A new tab fetches the frontend's figure chunks at once (modulepreload: off the main thread) and
// evaluates them (import) once the app's first run has started, at most 10 s on: the browser then
// waits for the server (vitviz.app.assets.EarlyCharts). The URLs are relative to the frontend's
// entry script, as its own imports are, so each module is evaluated once.
(() => {
  const entry = document.querySelector('script[type="module"][src*="static/js/index."]');
  if (!entry) return;
  const urls = {names}.map((name) => new URL("./" + name, entry.src).href);
  for (const url of urls) {
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = url;
    link.crossOrigin = "";
    document.head.appendChild(link);
  }
  const started = Date.now();
  const wait = () => {
    const app = document.querySelector("{app_root}");
    if ((app && app.getAttribute("data-test-script-state") === "running") || Date.now() - started > 10000) {
      for (const url of urls) import(url).catch(() => {});
    } else setTimeout(wait, 25);
  };
  wait();
})();
