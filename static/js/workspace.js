/* HAICO workspace: small behaviours htmx does not cover.
 *
 * - Inline edit: a [data-edit-open="name"] button shows the form
 *   [data-edit-form="name"] of its [data-edit-scope] and hides the scope's
 *   read view (.edit-view) unless the form says [data-keep-view];
 *   [data-edit-cancel] or Escape puts things back. Opening is client-side so
 *   it is instant; the server only sees the save. A field with
 *   [data-fill-from="selector"] starts from that element's current text (the
 *   read view may have been updated by a push since the page loaded).
 *   window.HAICO.openForm / closeForms let live.js open a row's forms.
 * - The plan's tree / checklist toggle, remembered across reloads.
 * - Failed htmx requests are announced instead of failing silently, and a
 *   session that expired sends the person to the login page.
 * Everything is delegated from document so content swapped in later (htmx
 * responses, WebSocket pushes) works without re-binding.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});

  // Plan steps and preferences are scopes without saying so (their rows
  // carry nothing they do not show).
  function scopeOf(el) {
    return el.closest("[data-edit-scope], li.step, li.pref");
  }

  function childrenMatching(scope, selector) {
    return Array.prototype.filter.call(scope.children, function (child) {
      return child.matches(selector);
    });
  }

  // A form built in the browser (data-built) is dropped on close, so the next
  // one starts from the row as it is then; the page's own forms are hidden.
  function closeForms(scope) {
    childrenMatching(scope, "form[data-edit-form]").forEach(function (form) {
      if (form.hasAttribute("data-built")) {
        form.remove();
        return;
      }
      form.reset();
      form.hidden = true;
      form.querySelectorAll(".form-error").forEach(function (error) { error.remove(); });
    });
    childrenMatching(scope, ".edit-view").forEach(function (view) {
      view.hidden = false;
    });
  }

  // `build(scope, name)` makes a form the scope does not have yet (a plan
  // step's or a preference's, from its panel's <template>).
  function openForm(scope, name, build) {
    closeForms(scope);
    var form = childrenMatching(scope, 'form[data-edit-form="' + name + '"]')[0] || (build && build(scope, name));
    if (!form) return null;
    form.hidden = false;
    if (!form.hasAttribute("data-keep-view")) {
      childrenMatching(scope, ".edit-view").forEach(function (view) {
        view.hidden = true;
      });
    }
    var field = form.querySelector("input[type=text], textarea");
    if (field && field.hasAttribute("data-fill-from")) {
      var source = document.querySelector(field.getAttribute("data-fill-from"));
      field.defaultValue = source ? source.textContent : "";
      field.value = field.defaultValue;
    }
    if (field) {
      field.focus();
      if (typeof field.select === "function" && name === "edit") field.select();
    }
    return form;
  }

  HAICO.openForm = openForm;
  HAICO.closeForms = closeForms;

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
      var again = view && view.querySelector("[data-edit-open], .step-menu, [data-pref-act=edit]");
      if (again) again.focus();
      return;
    }
    var viewButton = event.target.closest("[data-plan-view]");
    if (viewButton) {
      setPlanView(viewButton.closest("#panel-plan"), viewButton.getAttribute("data-plan-view"));
    }
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
    planView = window.localStorage.getItem("haico.planView") || "tree";
  } catch (e) { /* storage disabled: default view */ }

  function setPlanView(panel, view) {
    if (!panel) return;
    planView = view === "markdown" ? "markdown" : "tree";
    try { window.localStorage.setItem("haico.planView", planView); } catch (e) { /* ignore */ }
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
    var addToggle = panel.querySelector("[data-add-toggle]");
    if (addToggle) addToggle.hidden = planView !== "tree";
    if (planView === "markdown" && HAICO.writeChecklist) HAICO.writeChecklist(panel);
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

  HAICO.flash = flash;

  // A refusal the server could only answer for the whole page (a body too
  // big to read, something deleted in another tab): haico_site/middleware.py.
  document.addEventListener("haico:flash", function (event) {
    if (event.detail && event.detail.message) flash(event.detail.message);
  });

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
    } else if (status === 503) {
      // Ours when the database is away (haico_site.views.server_error), or a proxy's.
      flash("The server is not available just now; nothing was changed. Try again in a minute.");
    } else if (status >= 500) {
      flash("Something went wrong on the server; nothing was changed. Please try again.");
    } else {
      flash("The request was refused (" + status + "). Nothing was changed.");
    }
  });

  // The thread list's "Import a thread archive…": choosing the file sends it.
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (input.matches && input.matches("[data-import-file]") && input.files.length && input.form) input.form.requestSubmit();
  });

  document.addEventListener("htmx:sendError", function () {
    flash("Could not reach the server. Check your connection and try again.");
  });
})();
