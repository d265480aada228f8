// vitviz's plotly.js: the trace types vitviz's figures use (vitviz.render.plots), built from npm's
// plotly.js with esbuild as plotly.js builds its own bundles (its esbuild-config.js), minified.
// plotly.js's own cartesian bundle (plotly.js-cartesian-dist-min) took a new tab 0.5-0.7 s of its
// main thread to evaluate on a 2-core development machine; this one 0.17-0.25 s, and it draws
// every figure of the tour to the same SVG (docs/benchmarks.md, 2026-12-06, seventh session).
//
//     cd tools/plotly_bundle && npm install && node build.js
//
// writes ../../vitviz/app/static/plotly-cartesian.min.js. Its first line names the plotly.js
// version and the trace types, which vitviz.app.chart_script reads (CARTESIAN_TRACES): a figure with
// another type is drawn by the installed plotly package's full plotly.js.
const fs = require("fs");
const path = require("path");
const esbuild = require("esbuild");
const InlineCSSPlugin = require("esbuild-plugin-inline-css");
const { environmentPlugin } = require("esbuild-plugin-environment");

const TRACES = ["bar", "heatmap", "histogram", "image", "scatter"]; // scatter is in plotly.js's core
const version = require("plotly.js/package.json").version;
const out = path.join(__dirname, "..", "..", "vitviz", "app", "static", "plotly-cartesian.min.js");
const entry = path.join(__dirname, "entry.js");
const modules = TRACES.filter((name) => name !== "scatter").map((name) => `require("plotly.js/lib/${name}")`);
fs.writeFileSync(
  entry,
  `var Plotly = require("plotly.js/lib/core");\nPlotly.register([${modules.join(", ")}]);\nmodule.exports = Plotly;\n`,
);
esbuild
  .build({
    entryPoints: [entry],
    outfile: out,
    format: "iife",
    globalName: "Plotly",
    bundle: true,
    minify: true,
    legalComments: "eof",
    banner: { js: `/* plotly.js (cartesian - minified) v${version}, traces: ${TRACES.join(" ")}; built by vitviz's tools/plotly_bundle */` },
    plugins: [InlineCSSPlugin(), environmentPlugin({ NODE_DEBUG: false })],
    alias: { stream: "stream-browserify" },
    define: { global: "window", "define.amd": "false" },
    target: "es2016",
    logLevel: "info",
  })
  .then(() => fs.unlinkSync(entry))
  .catch(() => process.exit(1));
