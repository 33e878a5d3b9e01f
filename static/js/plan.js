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
 *   now comes before, and both steps' numbers as the page shows them,
 *   docs/adr/0125). The rows go back where they were at once and move
 *   when the server's patch arrives, so the page only ever shows the plan as
 *   stored. A drop onto another level is refused here with a message (the
 *   server refuses it too); only indent and outdent change a step's level.
 * - The rows' controls: the done box, a step's menu (one per panel) and its
 *   edit / sub-step forms, built from the panel's templates. They post to
 *   the URL the panel holds for each action (data-done-url, …), the step's
 *   id filled in; the rows carry no URLs.
 * static/js/live.js applies the patches and calls HAICO.planRowsChanged
 * after every change of the rows.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});
  var ACROSS_LEVELS = "Dragging only reorders a step among the steps at its own level; " +
    "use Indent or Outdent to change its level.";

  var live = HAICO.live;
  var rowId = live.rowId, stepNumber = live.stepNumber, stepRows = live.stepRows, depthOf = live.depthOf;
  var planChanged = live.planChanged, post = live.post;

  // --- the rows' controls: done, menu, forms ---------------------------------

  // The URL of `act` (done, indent, outdent, move, place, delete) on the step `li`.
  function stepUrl(li, act) {
    var panel = li.closest("#panel-plan");
    return HAICO.urls.fill(panel.getAttribute("data-" + act + "-url"), HAICO.urls.ROW, rowId(li));
  }

  function stepForm(scope, name) {
    var panel = scope.closest("#panel-plan");
    var template = panel && panel.querySelector('template[data-step-form="' + name + '"]');
    if (!template || !template.content.firstElementChild) return null;
    var pk = rowId(scope);
    var number = stepNumber(scope);
    var form = template.content.firstElementChild.cloneNode(true);
    form.setAttribute("data-built", "");
    ["action", "hx-post"].forEach(function (attr) {
      form.setAttribute(attr, HAICO.urls.fill(form.getAttribute(attr), HAICO.urls.ROW, pk));
    });
    form.querySelectorAll("[aria-label], [placeholder]").forEach(function (el) {
      ["aria-label", "placeholder"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value !== null) el.setAttribute(attr, value.split("{number}").join(number));
      });
    });
    form.querySelectorAll(".step-number").forEach(function (el) { el.textContent = number; });
    var field = form.querySelector("input[name=text]");
    var text = scope.querySelector(":scope > .edit-view .step-text");
    // The edit form starts from the step's text; reset() (Cancel) returns to it.
    // The text it was filled with goes with it (docs/adr/0125).
    if (name === "edit" && text && field) {
      field.defaultValue = text.textContent;
      HAICO.shown(form, "was", text.textContent);
    }
    scope.querySelector(":scope > .edit-view").insertAdjacentElement("afterend", form);
    if (window.htmx) window.htmx.process(form);
    return form;
  }

  function sibling(rows, i, step) {
    var depth = depthOf(rows[i]);
    for (var j = i + step; j >= 0 && j < rows.length; j += step) {
      var d = depthOf(rows[j]);
      if (d < depth) return null;
      if (d === depth) return rows[j];
    }
    return null;
  }

  var menuFor = null;

  function menu() {
    return document.getElementById("plan-menu");
  }

  function closeMenu(focusOpener) {
    var box = menu();
    if (!box || box.hidden) return;
    box.hidden = true;
    var opener = menuFor && menuFor.querySelector(".step-menu");
    if (opener) {
      opener.setAttribute("aria-expanded", "false");
      if (focusOpener) opener.focus();
    }
    menuFor = null;
  }

  function openMenu(li, opener) {
    var box = menu();
    if (!box) return;
    closeMenu(false);
    var rows = stepRows();
    var i = rows.indexOf(li);
    var can = {
      indent: !!sibling(rows, i, -1),
      outdent: depthOf(li) > 0,
      up: !!sibling(rows, i, -1),
      down: !!sibling(rows, i, 1),
    };
    box.querySelectorAll("[data-step-act]").forEach(function (item) {
      var act = item.getAttribute("data-step-act");
      item.disabled = act in can && !can[act];
    });
    menuFor = li;
    box.hidden = false;
    var rect = opener.getBoundingClientRect();
    var width = box.offsetWidth;
    box.style.top = Math.min(rect.bottom + 2, window.innerHeight - box.offsetHeight - 4) + "px";
    box.style.left = Math.max(4, rect.right - width) + "px";
    opener.setAttribute("aria-expanded", "true");
    var first = box.querySelector("[data-step-act]:not([disabled])");
    if (first) first.focus();
  }

  // htmx sends one request per row at a time: a second Alt+↓ waits for the
  // first move's answer, which renumbers the plan. The number it carries is
  // read when it is sent, so the person's own move before it is not taken
  // for someone else's (docs/adr/0125).
  // A drag's before_number (the step it was dropped before) is read then too.
  document.addEventListener("htmx:configRequest", function (event) {
    var li = event.detail.elt;
    var values = event.detail.parameters;
    if (!li || !li.matches || !li.matches("li.step") || values.number === undefined) return;
    values.number = stepNumber(li);
    var before = values.before_number ? document.getElementById("step-" + values.before) : null;
    if (before) values.before_number = stepNumber(before);
  });

  // Moves (indent, outdent, up, down, a drop) go one after another across
  // the whole plan, each once the answer to the one before is in the page:
  // htmx queues only one row's requests, and a move's numbers are read as
  // it goes (above), so a drop and then at once a move of another step
  // must see the plan the drop made, or the person's own drop is taken for
  // someone else's change (docs/adr/0125). The row is found again by its
  // id when it goes, in case the answer replaced it.
  var moving = Promise.resolve();

  function postMove(url, li, values) {
    var go = function () {
      return post(url, (li.id && document.getElementById(li.id)) || li, values);
    };
    moving = moving.then(go).catch(function () { /* that move's answer says what failed */ });
  }

  function stepAction(li, act, source) {
    var number = stepNumber(li);
    if (act === "edit" || act === "child") {
      HAICO.openForm(li, act, stepForm);
    } else if (act === "indent" || act === "outdent") {
      // Where the page shows the step: one moved meanwhile stays put (docs/adr/0125).
      postMove(stepUrl(li, act), li, { number: number });
    } else if (act === "up" || act === "down") {
      postMove(stepUrl(li, "move"), li, { direction: act, number: number });
    } else if (act === "delete") {
      var rows = stepRows();
      var i = rows.indexOf(li);
      var parent = i + 1 < rows.length && depthOf(rows[i + 1]) > depthOf(li);
      if (window.confirm("Delete step " + number + (parent ? " and all its sub-steps" : "") + "?")) post(stepUrl(li, "delete"), li);
    }
  }

  document.addEventListener("change", function (event) {
    var box = event.target.closest && event.target.closest("#plan-steps .edit-view > input[type=checkbox]");
    if (!box) return;
    var li = box.closest("li.step");
    post(stepUrl(li, "done"), li, { done: box.checked ? "1" : "0" });
    planChanged();
  });

  // A tick the server never took (the network away for a moment, a refusal)
  // is not left showing: the box goes back to what the server has, and the
  // plan says so until the next change goes through (docs/adr/0157). A box
  // clicked again meanwhile, or a row the server has since replaced, is the
  // newer word and is left alone.
  document.addEventListener("htmx:afterRequest", function (event) {
    var detail = event.detail;
    var config = detail && detail.requestConfig;
    var li = config && config.elt;
    if (detail.successful || !li || !li.matches || !li.matches("li.step") || !document.body.contains(li)) return;
    if (config.path !== stepUrl(li, "done") || !config.formData) return;
    var wanted = config.formData.get("done") === "1";
    var box = li.querySelector(":scope > .edit-view > input[type=checkbox]");
    if (!box || box.checked !== wanted) return;
    box.checked = !wanted;
    planChanged();
    var error = document.getElementById("plan-error");
    if (!error) return;
    var reached = detail.xhr && detail.xhr.status;
    error.textContent = "Step " + stepNumber(li) + " was not marked " + (wanted ? "done" : "not done") +
      (reached ? ": the server refused it." : ": the server could not be reached.") +
      " It shows what is saved; try again" + (reached ? "." : " once you are back online.");
    error.hidden = false;
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    var opener = target.closest && target.closest("#plan-steps .step-menu");
    if (opener) {
      var li = opener.closest("li.step");
      if (menuFor === li && !menu().hidden) closeMenu(true);
      else openMenu(li, opener);
      return;
    }
    var item = target.closest && target.closest("#plan-menu [data-step-act]");
    if (item && menuFor) {
      var row = menuFor;
      closeMenu(false);
      stepAction(row, item.getAttribute("data-step-act"), item);
      return;
    }
    if (menu() && !menu().hidden && !(target.closest && target.closest("#plan-menu"))) closeMenu(false);
  });

  document.addEventListener("dblclick", function (event) {
    var text = event.target.closest && event.target.closest("#plan-steps .edit-view .step-text");
    if (text) HAICO.openForm(text.closest("li.step"), "edit", stepForm);
  });

  document.addEventListener("keydown", function (event) {
    var box = menu();
    if (!box || box.hidden || !box.contains(document.activeElement)) return;
    var items = Array.prototype.slice.call(box.querySelectorAll("[data-step-act]:not([disabled])"));
    var at = items.indexOf(document.activeElement);
    if (event.key === "Escape") {
      event.preventDefault();
      closeMenu(true);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      var next = items[(at + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length];
      if (next) next.focus();
    } else if (event.key === "Tab") {
      closeMenu(false);
    }
  });

  document.addEventListener("scroll", function (event) {
    if (menuFor && event.target.contains && event.target.contains(menuFor)) closeMenu(false);
  }, true);


  // For the keys and drag below.
  HAICO.plan = {
    rows: stepRows,
    depthOf: depthOf,
    rowId: rowId,
    url: stepUrl,
    act: function (li, act) { stepAction(li, act, li); },
    openMenu: function (li) {
      var opener = li.querySelector(":scope > .edit-view .step-menu");
      if (opener) openMenu(li, opener);
    },
    post: function (url, li, values) { post(url, li, values); },
    postMove: function (url, li, values) { postMove(url, li, values); },
  };

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
    // A viewer's page (static/js/read_only.js) moves nothing.
    if (!steps || !window.Sortable || steps.closest(".is-read-only")) return;
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
        // With where the page shows the step and the step it now comes
        // before ("" at the end of its level): a drop on a plan someone changed
        // since moves nothing (docs/adr/0125).
        var atEnd = !before || plan().depthOf(before) < plan().depthOf(item);
        plan().postMove(plan().url(item, "place"), item, {
          before: before ? plan().rowId(before) : "",
          number: stepNumber(item),
          before_number: atEnd ? "" : stepNumber(before),
        });
      },
    });
  }
})();
