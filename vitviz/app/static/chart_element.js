// vitviz's chart element (vitviz.app.charts.draw): each figure is handed to the drawing code,
// static/chart.js, which the page imports once from the app (vitviz.app.chart_script).
let drawing = null;
export default function (component) {
  if (!drawing) {
    const entry = document.querySelector('script[type="module"][src*="static/js/index."]');
    const path = {module};
    drawing = import(new URL(entry ? "../../" + path : path, entry ? entry.src : document.baseURI).href);
  }
  drawing.then((module) => module.default(component));
}
