/* Chart.js charts in artifacts (their configuration in a JSON script beside
 * the canvas). Loaded on the owner's and the staff workspace pages.
 */
(function () {
  "use strict";

  function initCharts(root) {
    if (!window.Chart) return;
    Object.values(Chart.instances || {}).forEach(function (chart) {
      if (!chart.canvas || !chart.canvas.isConnected) chart.destroy();
    });
    root.querySelectorAll("canvas[data-chart-config]").forEach(function (canvas) {
      if (Chart.getChart(canvas)) return;
      var scope = canvas.closest(".artifact") || document;
      var script = scope.querySelector("#" + CSS.escape(canvas.dataset.chartConfig));
      if (!script) return;
      try {
        new Chart(canvas, JSON.parse(script.textContent));
      } catch (e) {
        canvas.replaceWith(Object.assign(document.createElement("p"), {
          className: "artifact-banner",
          textContent: "This chart could not be drawn; its numbers are in the Data table below.",
        }));
      }
    });
  }

  // htmx fires htmx:load on every element it inserts, including out-of-band
  // swaps from the WebSocket, and once on <body> at start-up.
  document.addEventListener("htmx:load", function (event) {
    initCharts(event.target && event.target.querySelectorAll ? event.target : document);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { initCharts(document); });
  } else {
    initCharts(document);
  }
})();
