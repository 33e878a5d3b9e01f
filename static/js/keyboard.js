/* HAICO: fewer Tab stops on the workspace page (docs/adr/0023).
 *
 * - A [role=toolbar] is one Tab stop: the control last used in it (at first
 *   the pressed one, or the first) has tabindex 0, the others -1; ← / → (and
 *   ↑ / ↓, Home, End) move between them. Toolbars swapped in later (htmx
 *   answers, live patches) are set up when they arrive (HAICO.rovingToolbars).
 * - An add form (form.add-form) is one Tab stop while its first text field
 *   is empty: its other controls (kind, detail, the submit button) join the
 *   Tab order once something is typed. They stay visible and clickable, and
 *   Enter in the field submits, so nothing is out of reach.
 * Plan rows have their own roving focus (static/js/plan.js).
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});

  function controls(toolbar) {
    return Array.prototype.filter.call(toolbar.querySelectorAll("button, select, input, a[href]"), function (el) {
      // A dialog or an open edit form inside a toolbar keeps its own Tab order.
      return !el.disabled && !el.closest("[hidden], dialog, .edit-form") && el.closest("[role=toolbar]") === toolbar;
    });
  }

  function setCurrent(toolbar, current) {
    controls(toolbar).forEach(function (el) {
      var wanted = el === current ? "0" : "-1";
      if (el.getAttribute("tabindex") !== wanted) el.setAttribute("tabindex", wanted);
    });
  }

  function setUp(toolbar) {
    var items = controls(toolbar);
    if (!items.length) return;
    var current = items.filter(function (el) { return el.getAttribute("tabindex") === "0"; })[0] ||
      items.filter(function (el) { return el.getAttribute("aria-pressed") === "true"; })[0] || items[0];
    setCurrent(toolbar, current);
  }

  // A preference row's Lock / Edit / Delete come from the server as a plain
  // group (workspace/rows.py keeps a long list small); here they become a
  // toolbar named after the preference.
  function labelPreferenceActions(root) {
    root.querySelectorAll(".pref .row-actions:not([role])").forEach(function (group) {
      var title = group.closest(".pref").querySelector(".pref-title");
      group.setAttribute("role", "toolbar");
      group.setAttribute("aria-label", "Actions for preference " + (title ? title.textContent : ""));
    });
  }

  function rovingToolbars(root) {
    if (!root || !root.querySelectorAll) return;
    labelPreferenceActions(root);
    if (root.matches && root.matches("[role=toolbar]")) setUp(root);
    root.querySelectorAll("[role=toolbar]").forEach(setUp);
  }

  HAICO.rovingToolbars = rovingToolbars;

  document.addEventListener("focusin", function (event) {
    var toolbar = event.target.closest && event.target.closest("[role=toolbar]");
    if (toolbar && controls(toolbar).indexOf(event.target) !== -1) setCurrent(toolbar, event.target);
  });

  var NEXT = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var toolbar = event.target.closest && event.target.closest("[role=toolbar]");
    if (!toolbar || event.target.matches("input[type=text], textarea, select")) return;
    var items = controls(toolbar);
    var at = items.indexOf(event.target);
    if (at === -1) return;
    var to = null;
    if (event.key in NEXT) to = items[(at + NEXT[event.key] + items.length) % items.length];
    else if (event.key === "Home") to = items[0];
    else if (event.key === "End") to = items[items.length - 1];
    if (!to) return;
    event.preventDefault();
    setCurrent(toolbar, to);
    to.focus();
  });

  // --- add forms ---------------------------------------------------------------

  function addFormStops(form) {
    var field = form.querySelector("input[type=text]");
    if (!field) return;
    var empty = field.value === "";
    form.querySelectorAll("input, select, textarea, button").forEach(function (el) {
      if (el === field || el.type === "hidden") return;
      if (empty) el.setAttribute("tabindex", "-1");
      else el.removeAttribute("tabindex");
    });
  }

  function addForms(root) {
    if (!root || !root.querySelectorAll) return;
    if (root.matches && root.matches("form.add-form")) addFormStops(root);
    root.querySelectorAll("form.add-form").forEach(addFormStops);
  }

  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("form.add-form");
    if (form && event.target === form.querySelector("input[type=text]")) addFormStops(form);
  });
  // A saved add form is cleared by script (no input event).
  document.addEventListener("haico:saved", function (event) {
    var form = event.target.closest && event.target.closest("form.add-form");
    if (form) window.setTimeout(function () { addFormStops(form); }, 0);
  });

  function setUpAll(root) {
    rovingToolbars(root);
    addForms(root);
  }

  document.addEventListener("DOMContentLoaded", function () { setUpAll(document.body); });
  document.addEventListener("htmx:load", function (event) { setUpAll(event.target); });
})();
