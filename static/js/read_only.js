/* A viewer's page (docs/adr/0084): every control that would change the
 * thread is disabled, and text boxes are read-only (their text can still be
 * selected and copied). The server refuses a viewer's writes anyway; this
 * keeps the page from offering them. Live pushes replace rows and controls,
 * so what arrives later is disabled too (a MutationObserver). Reading stays:
 * links, downloads, history, comparing versions, the trajectory. */
(function () {
  "use strict";
  var WRITES = "form[method=post], form[ws-send], form[hx-post]";
  // Controls that write through the page's scripts rather than a form: a
  // step's Done box and menu, a preference's Lock / Edit / Delete (workspace/rows.py).
  var OPENERS = "[hx-post], [data-edit-open], [data-add-toggle], [draggable=true], " +
    "li.step input[type=checkbox], .step-menu, [data-step-act], [data-pref-act]";

  function lock(root) {
    var grid = document.querySelector(".workspace-grid");
    if (!grid) return;
    var scope = root && root.querySelectorAll ? root : grid;
    var forms = Array.prototype.slice.call(scope.querySelectorAll(WRITES));
    // A control swapped into a form (the chat's Send / Stop after a turn) locks with its form.
    var around = scope.closest && scope.closest(WRITES);
    if (around) forms.push(around);
    forms.forEach(function (form) {
      if (!grid.contains(form)) return;
      Array.prototype.forEach.call(form.elements, function (el) {
        if ((el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type === "text")) && !el.readOnly) {
          el.readOnly = true;
        } else if (!el.disabled && el.type !== "hidden") {
          el.disabled = true;
        }
      });
    });
    Array.prototype.forEach.call(scope.querySelectorAll(OPENERS), function (el) {
      if (!grid.contains(el)) return;
      if ("disabled" in el) el.disabled = true;
      el.setAttribute("aria-disabled", "true");
      el.removeAttribute("draggable");
    });
  }

  function start() {
    var grid = document.querySelector(".workspace-grid");
    if (!grid) return;
    lock(grid);
    new MutationObserver(function (records) {
      records.forEach(function (record) {
        Array.prototype.forEach.call(record.addedNodes, function (node) {
          if (node.nodeType === 1) lock(node);
        });
      });
    }).observe(grid, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
