/* HAICO plan rows: one Tab stop, keys, and drag to reorder (docs/adr/0023).
 *
 * - Roving focus: the whole plan is one Tab stop. One row (the last one
 *   focused, at first the first) has tabindex 0, every other row and every
 *   control inside a row -1. On a focused row: ↑ / ↓ (Home / End) go to the
 *   previous / next row, Enter edits, Space ticks it done, the menu key (or
 *   Shift+F10) opens its menu, Alt+↑ / Alt+↓ move it among its siblings.
 * - In a step's editor: Alt+↑ / Alt+↓ move the step, Tab / Shift+Tab indent
 *   and outdent it (the editor and its text stay open; Escape closes it and
 *   puts focus back on the row).
 * - Drag (SortableJS, static/vendor/): a row dropped among its siblings is
 *   placed there with its sub-steps (POST <plan>/<id>/place/ with the step it
 *   now comes before). The rows go back where they were at once and move
 *   when the server's patch arrives, so the page only ever shows the plan as
 *   stored. A drop onto another level is refused here with a message (the
 *   server refuses it too); only indent and outdent change a step's level.
 * The rows' controls and menu are static/js/live.js's; it calls
 * HAICO.planRowsChanged after every change of the rows.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});
  var ACROSS_LEVELS = "Dragging only reorders a step among the steps at its own level; " +
    "use Indent or Outdent to change its level.";

  function plan() { return HAICO.plan; }
  function list() { return document.getElementById("plan-steps"); }

  // --- roving focus -------------------------------------------------------------

  var currentId = null;

  function setTabindex(el, value) {
    if (el.getAttribute("tabindex") !== value) el.setAttribute("tabindex", value);
  }

  HAICO.planRowsChanged = function (rows) {
    if (!rows.length) return;
    var current = currentId && document.getElementById(currentId);
    if (!current || rows.indexOf(current) === -1) {
      current = rows[0];
      currentId = current.id;
    }
    rows.forEach(function (li) {
      setTabindex(li, li === current ? "0" : "-1");
      li.querySelectorAll(":scope > .edit-view input, :scope > .edit-view button").forEach(function (el) {
        setTabindex(el, "-1");
      });
    });
    if (!sortable || sortable.el !== list()) startDrag();
  };

  function makeCurrent(li) {
    if (currentId === li.id) return;
    var old = currentId && document.getElementById(currentId);
    if (old) setTabindex(old, "-1");
    currentId = li.id;
    setTabindex(li, "0");
  }

  function focusRow(li) {
    if (!li) return;
    makeCurrent(li);
    li.focus();
  }

  document.addEventListener("focusin", function (event) {
    var li = event.target.closest && event.target.closest("#plan-steps > li.step");
    if (li) makeCurrent(li);
  });

  function boxOf(li) {
    return li.querySelector(":scope > .edit-view > input[type=checkbox]");
  }

  function onRow(event, li) {
    var rows = plan().rows();
    var i = rows.indexOf(li);
    var key = event.key;
    if (event.altKey && (key === "ArrowUp" || key === "ArrowDown")) {
      plan().act(li, key === "ArrowUp" ? "up" : "down");
    } else if (event.altKey || event.ctrlKey || event.metaKey) {
      return;
    } else if (key === "ArrowUp" || key === "ArrowDown") {
      focusRow(rows[i + (key === "ArrowUp" ? -1 : 1)]);
    } else if (key === "Home" || key === "End") {
      focusRow(rows[key === "Home" ? 0 : rows.length - 1]);
    } else if (key === "Enter") {
      // An editor already open keeps what is typed in it.
      var open = li.querySelector(':scope > form[data-edit-form="edit"] input[name=text]');
      if (open) open.focus();
      else plan().act(li, "edit");
    } else if (key === " ") {
      var box = boxOf(li);
      if (box) box.click(); // live.js posts it on "change"
    } else if (key === "ContextMenu" || (key === "F10" && event.shiftKey)) {
      plan().openMenu(li);
    } else {
      return;
    }
    event.preventDefault();
  }

  function inEditor(event, li) {
    var key = event.key;
    if (event.altKey && (key === "ArrowUp" || key === "ArrowDown")) {
      plan().act(li, key === "ArrowUp" ? "up" : "down");
    } else if (key === "Tab" && !event.altKey && !event.ctrlKey && !event.metaKey) {
      plan().act(li, event.shiftKey ? "outdent" : "indent");
    } else if (key === "Escape") {
      // workspace.js closes the form after this; the row keeps the focus.
      window.setTimeout(function () { if (li.isConnected) focusRow(li); }, 0);
      return;
    } else {
      return;
    }
    event.preventDefault();
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var li = target.closest("#plan-steps > li.step");
    if (!li) return;
    if (target === li) {
      onRow(event, li);
    } else if (target.matches('form[data-edit-form="edit"] input[name=text]')) {
      inEditor(event, li);
    } else if (target.matches(".edit-view > input[type=checkbox], .edit-view .step-menu") &&
               (event.key === "ArrowUp" || event.key === "ArrowDown") && !event.altKey) {
      // A click left focus on a control of the row: the arrows still go by row.
      event.preventDefault();
      var rows = plan().rows();
      focusRow(rows[rows.indexOf(li) + (event.key === "ArrowUp" ? -1 : 1)]);
    }
  }, true);

  // --- drag ---------------------------------------------------------------------

  var sortable = null;
  var drag = null;

  function subtreeOf(rows, i) {
    var depth = plan().depthOf(rows[i]);
    var j = i + 1;
    while (j < rows.length && plan().depthOf(rows[j]) > depth) j++;
    return rows.slice(i, j);
  }

  // The step the dragged row now comes before, skipping its own sub-steps
  // (they stayed where they were); null at the end of the plan.
  function droppedBefore(item, subtree) {
    var next = item.nextElementSibling;
    while (next && (subtree.indexOf(next) !== -1 || !next.matches("li.step"))) next = next.nextElementSibling;
    return next;
  }

  // Whether dropping row i before row `before` (null: the end) keeps it among
  // its siblings: workspace/plan_tree.py's place_before, on the same rows.
  function staysAtItsLevel(rows, i, before) {
    var depthOf = plan().depthOf;
    var subtree = subtreeOf(rows, i);
    var rest = rows.filter(function (li) { return subtree.indexOf(li) === -1; });
    var depth = depthOf(rows[i]);
    var parent = null;
    for (var p = i - 1; p >= 0; p--) {
      if (depthOf(rows[p]) < depth) { parent = rows[p]; break; }
    }
    var first = parent ? rest.indexOf(parent) + 1 : 0;
    var last = rest.length;
    if (parent) {
      last = first;
      while (last < rest.length && depthOf(rest[last]) > depthOf(parent)) last++;
    }
    var slot = before ? rest.indexOf(before) : rest.length;
    return first <= slot && slot <= last && (slot === last || depthOf(rest[slot]) === depth);
  }

  function showError(message) {
    var slot = document.getElementById("plan-error");
    if (!slot) return;
    slot.textContent = message;
    slot.hidden = false;
  }

  function startDrag() {
    var steps = list();
    if (!steps || !window.Sortable) return;
    sortable = window.Sortable.create(steps, {
      draggable: "li.step",
      // The row's controls and an open editor keep their clicks, selection and focus.
      filter: "input, button, form, .edit-form",
      preventOnFilter: false,
      // Pointer events rather than HTML drag and drop: the same on touch screens.
      forceFallback: true,
      fallbackOnBody: true,
      fallbackTolerance: 4,
      delay: 200,
      delayOnTouchOnly: true,
      animation: 0,
      ghostClass: "is-drop-target",
      chosenClass: "is-dragged",
      onStart: function (event) {
        var rows = plan().rows();
        var i = rows.indexOf(event.item);
        var subtree = subtreeOf(rows, i);
        drag = { rows: rows, i: i, subtree: subtree, next: event.item.nextElementSibling };
        subtree.slice(1).forEach(function (li) { li.classList.add("is-dragged-along"); });
      },
      onEnd: function (event) {
        var state = drag;
        drag = null;
        if (!state) return;
        state.subtree.forEach(function (li) { li.classList.remove("is-dragged-along"); });
        var item = event.item;
        var before = droppedBefore(item, state.subtree);
        // Back where it was: the server's patch moves it (or nothing moves).
        steps.insertBefore(item, state.next);
        if (before === state.subtree[state.subtree.length - 1].nextElementSibling || before === item) return;
        if (!staysAtItsLevel(state.rows, state.i, before)) {
          showError(ACROSS_LEVELS);
          return;
        }
        plan().post(plan().url() + plan().rowId(item) + "/place/", item, { before: before ? plan().rowId(before) : "" });
      },
    });
  }
})();
