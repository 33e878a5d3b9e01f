/* HAICO workspace: small behaviours htmx does not cover.
 *
 * - Inline edit: a [data-edit-open="name"] button shows the form
 *   [data-edit-form="name"] of its [data-edit-scope] and hides the scope's
 *   read view (.edit-view) unless the form says [data-keep-view];
 *   [data-edit-cancel] or Escape puts things back. Opening is client-side so
 *   it is instant; the server only sees the save.
 * - The plan's tree / checklist toggle, remembered across panel swaps.
 * - Failed htmx requests are announced instead of failing silently, and a
 *   session that expired sends the person to the login page.
 * Everything is delegated from document so panels swapped in later (htmx
 * responses, WebSocket pushes) work without re-binding.
 */
(function () {
  "use strict";

  function scopeOf(el) {
    return el.closest("[data-edit-scope]");
  }

  function childrenMatching(scope, selector) {
    return Array.prototype.filter.call(scope.children, function (child) {
      return child.matches(selector);
    });
  }

  function closeForms(scope) {
    childrenMatching(scope, "form[data-edit-form]").forEach(function (form) {
      form.reset();
      form.hidden = true;
    });
    childrenMatching(scope, ".edit-view").forEach(function (view) {
      view.hidden = false;
    });
  }

  // A plan step carries no forms of its own (the plan panel is re-rendered
  // after every agent tool call, and two hidden forms per step were a third
  // of that render): the panel has one <template data-step-form="name"> per
  // kind, with "{pk}" and "{number}" placeholders, and a step's form is made
  // from it the first time the person opens it.
  function stepForm(scope, name) {
    var pk = scope.getAttribute("data-step-pk");
    var number = scope.getAttribute("data-step-number");
    var panel = pk && scope.closest("#panel-plan");
    var template = panel && panel.querySelector('template[data-step-form="' + name + '"]');
    if (!template || !template.content.firstElementChild) return null;
    var form = template.content.firstElementChild.cloneNode(true);
    [form].concat(Array.prototype.slice.call(form.querySelectorAll("*"))).forEach(function (el) {
      ["action", "hx-post", "aria-label", "placeholder"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value !== null) el.setAttribute(attr, value.split("{pk}").join(pk).split("{number}").join(number));
      });
    });
    form.querySelectorAll(".step-number").forEach(function (el) { el.textContent = number; });
    var text = childrenMatching(scope, ".edit-view")[0];
    text = text && text.querySelector(".step-text");
    var field = form.querySelector("input[name=text]");
    // The edit form starts from the step's text; reset() (Cancel) returns to it.
    if (name === "edit" && text && field) field.defaultValue = text.textContent;
    // Same order as before: read view, edit form, sub-step form.
    var before = childrenMatching(scope, name === "edit" ? ".edit-view" : '.edit-view, form[data-edit-form="edit"]');
    if (!before.length) return null;
    before[before.length - 1].insertAdjacentElement("afterend", form);
    if (window.htmx) window.htmx.process(form);
    return form;
  }

  function openForm(scope, name) {
    closeForms(scope);
    var form = childrenMatching(scope, 'form[data-edit-form="' + name + '"]')[0] || stepForm(scope, name);
    if (!form) return;
    form.hidden = false;
    if (!form.hasAttribute("data-keep-view")) {
      childrenMatching(scope, ".edit-view").forEach(function (view) {
        view.hidden = true;
      });
    }
    var field = form.querySelector("input[type=text], textarea");
    if (field) {
      field.focus();
      if (typeof field.select === "function" && name === "edit") field.select();
    }
  }

  document.addEventListener("click", function (event) {
    var opener = event.target.closest("[data-edit-open]");
    if (opener) {
      var scope = scopeOf(opener);
      if (scope) openForm(scope, opener.getAttribute("data-edit-open") || "edit");
      return;
    }
    var cancel = event.target.closest("[data-edit-cancel]");
    if (cancel) {
      var cancelScope = scopeOf(cancel);
      if (cancelScope) closeForms(cancelScope);
      var view = cancelScope && childrenMatching(cancelScope, ".edit-view")[0];
      var again = view && view.querySelector("[data-edit-open]");
      if (again) again.focus();
      return;
    }
    var viewButton = event.target.closest("[data-plan-view]");
    if (viewButton) {
      setPlanView(viewButton.closest("#panel-plan"), viewButton.getAttribute("data-plan-view"));
    }
  });

  document.addEventListener("dblclick", function (event) {
    var text = event.target.closest("[data-edit-dblclick]");
    var scope = text && scopeOf(text);
    if (scope) openForm(scope, "edit");
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var form = event.target.closest && event.target.closest("form[data-edit-form]");
    var scope = form && scopeOf(form);
    if (scope) {
      event.preventDefault();
      closeForms(scope);
    }
  });

  // --- plan view toggle -------------------------------------------------------
  var planView = "tree";
  try {
    planView = window.sessionStorage.getItem("haico.planView") || "tree";
  } catch (e) { /* storage disabled: default view */ }

  function setPlanView(panel, view) {
    if (!panel) return;
    planView = view === "markdown" ? "markdown" : "tree";
    try { window.sessionStorage.setItem("haico.planView", planView); } catch (e) { /* ignore */ }
    applyPlanView(panel);
  }

  function applyPlanView(panel) {
    panel.querySelectorAll("[data-plan-pane]").forEach(function (pane) {
      pane.hidden = pane.getAttribute("data-plan-pane") !== planView;
    });
    panel.querySelectorAll("button[data-plan-view]").forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-plan-view") === planView));
    });
    var add = panel.querySelector(".plan-add");
    if (add) add.hidden = planView !== "tree";
  }

  function applyToNew(root) {
    var panel = root.id === "panel-plan" ? root : root.querySelector && root.querySelector("#panel-plan");
    if (panel) applyPlanView(panel);
  }

  document.addEventListener("DOMContentLoaded", function () { applyToNew(document.body); });
  // htmx fires htmx:load for every element it swaps in (including OOB swaps).
  document.addEventListener("htmx:load", function (event) { applyToNew(event.target); });

  // --- request failures -------------------------------------------------------
  var flashTimer = null;

  function flash(message) {
    var box = document.getElementById("flash");
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
    window.clearTimeout(flashTimer);
    flashTimer = window.setTimeout(function () { box.hidden = true; }, 6000);
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    // login_required answered with a redirect that the browser followed: the
    // session is gone, so go to the login page instead of swapping it into a panel.
    if (xhr && xhr.responseURL && xhr.responseURL.indexOf("/accounts/login/") !== -1) {
      event.detail.shouldSwap = false;
      window.location.href = xhr.responseURL;
    }
  });

  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 404) {
      flash("That item no longer exists (it may have just been changed). Reload the page to see the latest.");
    } else if (status === 403) {
      flash("Your session has expired or the page is out of date. Reload the page and try again.");
    } else if (status === 405) {
      flash("That action is not allowed here.");
    } else if (status >= 500) {
      flash("Something went wrong on the server; nothing was changed. Please try again.");
    } else {
      flash("The request was refused (" + status + "). Nothing was changed.");
    }
  });

  document.addEventListener("htmx:sendError", function () {
    flash("Could not reach the server. Check your connection and try again.");
  });
})();
