/* The Document region's Export menu (templates/workspace/panels/centre.html#export_menu).

A document download is of the saved text, so unsaved editor text is saved
first (HAICO.documentSaved, static/js/centre.js) and the download follows.
A chart image is drawn in the browser from the chart on screen, on white,
since Chart.js draws on a transparent canvas. */
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

  function chartPng(configId, filename) {
    var canvas = document.querySelector('canvas[data-chart-config="' + CSS.escape(configId) + '"]');
    if (!canvas) return;
    var copy = document.createElement("canvas");
    copy.width = canvas.width;
    copy.height = canvas.height;
    var context = copy.getContext("2d");
    context.fillStyle = "#ffffff";
    context.fillRect(0, 0, copy.width, copy.height);
    context.drawImage(canvas, 0, 0);
    var link = document.createElement("a");
    link.href = copy.toDataURL("image/png");
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
      chartPng(png.dataset.exportChartPng, png.dataset.exportFilename);
      setOpen(menuOf(png), false);
      return;
    }
    var documentLink = event.target.closest("a[data-export-document]");
    if (documentLink && window.HAICO && HAICO.documentSaved && !documentLink.dataset.exportSaved) {
      event.preventDefault();
      var href = documentLink.href;
      HAICO.documentSaved().then(function (saved) {
        if (!saved) return; // centre.js already says why the text could not be saved
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
