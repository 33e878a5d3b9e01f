/* The Document region's Export menu (templates/workspace/panels/centre.html#export_menu):
one control in the region's header for the document and the artifact shown.

A document download is of the saved text, so unsaved editor text is saved
first (HAICO.documentSaved, static/js/document_editor.js) and the download follows.
A chart image is drawn in the browser by a second, off-screen Chart.js
instance from the chart's own configuration, at a fixed size with its title
and on white (Chart.js draws on a transparent canvas). */
(function () {
  "use strict";

  function menuOf(el) { return el.closest("[data-export-menu]"); }

  function setOpen(menu, open) {
    var toggle = menu.querySelector("[data-export-toggle]");
    var options = menu.querySelector(".export-options");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    options.hidden = !open;
  }

  function closeAll(except) {
    document.querySelectorAll("[data-export-menu]").forEach(function (menu) {
      if (menu !== except) setOpen(menu, false);
    });
  }

  // A chart image is the same at any window size: drawn again, off screen, at
  // 800 x 450 CSS pixels and a pixel ratio of 1.5 (a 1200 x 675 image, labels
  // as large against the chart as on a screen), with its title and on white.
  var PNG_SIZE = { width: 800, height: 450, ratio: 1.5 };

  var whiteBackground = {
    id: "haicoWhiteBackground",
    beforeDraw: function (chart) {
      var context = chart.ctx;
      context.save();
      context.fillStyle = "#ffffff";
      context.fillRect(0, 0, chart.width, chart.height);
      context.restore();
    },
  };

  function chartPng(configId, filename, title) {
    var script = document.getElementById(configId);
    if (!script || !window.Chart) return;
    var config = JSON.parse(script.textContent); // a fresh copy: the chart on screen is left as it is
    var options = config.options = config.options || {};
    options.responsive = false;
    options.maintainAspectRatio = false;
    options.animation = false;
    options.devicePixelRatio = PNG_SIZE.ratio;
    options.layout = { padding: 16 }; // a margin the screen's frame gives it
    options.plugins = options.plugins || {};
    options.plugins.title = {
      display: Boolean(title), text: title || "", color: "#1f2328",
      font: { size: 20, weight: "bold" }, padding: { top: 6, bottom: 14 },
    };
    config.plugins = [whiteBackground];
    var canvas = document.createElement("canvas");
    canvas.width = PNG_SIZE.width;
    canvas.height = PNG_SIZE.height;
    var chart = new Chart(canvas, config);
    var url = chart.toBase64Image("image/png", 1);
    chart.destroy();
    var link = document.createElement("a");
    link.href = url;
    link.download = (filename || "chart") + ".png";
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var toggle = event.target.closest("[data-export-toggle]");
    if (toggle) {
      var menu = menuOf(toggle);
      var open = toggle.getAttribute("aria-expanded") !== "true";
      closeAll(menu);
      setOpen(menu, open);
      return;
    }
    var png = event.target.closest("[data-export-chart-png]");
    if (png) {
      chartPng(png.dataset.exportChartPng, png.dataset.exportFilename, png.dataset.exportTitle);
      setOpen(menuOf(png), false);
      return;
    }
    var documentLink = event.target.closest("a[data-export-document]");
    if (documentLink && window.HAICO && HAICO.documentSaved && !documentLink.dataset.exportSaved) {
      event.preventDefault();
      var href = documentLink.href;
      HAICO.documentSaved().then(function (saved) {
        if (!saved) return; // document_editor.js already says why the text could not be saved
        documentLink.dataset.exportSaved = "1";
        documentLink.click();
        delete documentLink.dataset.exportSaved;
      });
      setOpen(menuOf(documentLink), false);
      return;
    }
    if (event.target.closest(".export-option")) {
      setOpen(menuOf(event.target), false);
      return;
    }
    if (!event.target.closest("[data-export-menu]")) closeAll(null);
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var menu = event.target.closest && event.target.closest("[data-export-menu]");
    if (!menu) return;
    setOpen(menu, false);
    menu.querySelector("[data-export-toggle]").focus();
  });
})();
