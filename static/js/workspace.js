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
 * - Failed htmx requests are announced instead of failing silently. A page
 *   whose session ended (or whose browser is now someone else's) stays as it
 *   is, with what its person typed, and offers to log in again in another
 *   tab; its requests carry the CSRF token of the cookie, renewed by that
 *   login, and whom the page is for (docs/adr/0108).
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
      HAICO.shown(form, "was", field.defaultValue);
    }
    if (field) {
      field.focus();
      if (typeof field.select === "function" && name === "edit") field.select();
    }
    return form;
  }

  HAICO.openForm = openForm;
  // A form carries what it was filled with (a hidden field), so the server
  // keeps a change someone made since rather than save over it (docs/adr/0125).
  HAICO.shown = function (form, name, value) {
    var field = form.querySelector('input[type=hidden][name="' + name + '"]');
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = name;
      form.appendChild(field);
    }
    field.value = value;
  };
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

  // --- whom a request is for ---------------------------------------------------
  // Django's CSRF cookie (its default name; the settings keep it), read at
  // each request: logging in again in another tab renews it, and the token
  // the page was rendered with is refused from then on.
  var CSRF_COOKIE = "csrftoken";

  HAICO.csrfToken = function () {
    var match = document.cookie.match(new RegExp("(?:^|;\\s*)" + CSRF_COOKIE + "=([^;]+)"));
    if (match) return decodeURIComponent(match[1]);
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; } catch (e) { return ""; }
  };

  // The person the page was rendered for: the server does a request only as them.
  HAICO.pagePerson = function () {
    return (document.body && document.body.getAttribute("data-person")) || "";
  };

  // The headers of a request the page sends with fetch, as htmx's carry them.
  HAICO.requestHeaders = function () {
    var headers = { "HX-Request": "true", "X-CSRFToken": HAICO.csrfToken() };
    if (HAICO.pagePerson()) headers["X-HAICO-Person"] = HAICO.pagePerson();
    return headers;
  };

  // A page's socket names the person too: one opened again after its
  // session ended is refused if someone else has signed in since.
  if (window.htmx) {
    htmx.createWebSocket = function (url) {
      var person = HAICO.pagePerson();
      return new WebSocket(person ? url + (url.indexOf("?") < 0 ? "?" : "&") + "person=" + encodeURIComponent(person) : url);
    };
  }

  document.addEventListener("htmx:configRequest", function (event) {
    var token = HAICO.csrfToken();
    if (token) {
      event.detail.headers["X-CSRFToken"] = token;
      // A form's own field is what Django checks first.
      if (event.detail.parameters.csrfmiddlewaretoken) event.detail.parameters.csrfmiddlewaretoken = token;
    }
    if (HAICO.pagePerson()) event.detail.headers["X-HAICO-Person"] = HAICO.pagePerson();
  });

  // --- request failures -------------------------------------------------------
  var flashTimer = null;

  function flash(message) {
    var box = document.getElementById("flash");
    if (!box) return;
    box.textContent = message;
    box.hidden = false;
    delete box.dataset.sessionEnded;
    window.clearTimeout(flashTimer);
    flashTimer = window.setTimeout(function () { box.hidden = true; }, 6000);
  }

  HAICO.flash = flash;

  var SESSION_ENDED = "Your session has ended, so this was not done; nothing was changed. " +
    "Log in again in another tab: this page keeps what you typed.";

  // The account was deactivated by staff (the server's 401 says so with
  // X-HAICO-Signed-In: deactivated, the socket with close code 4410): its
  // person cannot log in again, so nothing offers to (docs/adr/0108).
  HAICO.ACCOUNT_DEACTIVATED = "Your account has been deactivated, so nothing more can be saved here. " +
    "Copy anything you typed that is not saved; ask whoever runs this HAICO to reactivate it.";

  HAICO.accountDeactivated = function (xhr) {
    return !!(xhr && xhr.getResponseHeader && xhr.getResponseHeader("X-HAICO-Signed-In") === "deactivated");
  };

  // Stays until a request goes through again: nothing the person does here
  // works until they have logged in, and the link opens the login in a new
  // tab so that this one keeps its unsaved text.
  function sessionEnded(xhr, message, deactivated) {
    var box = document.getElementById("flash");
    if (!box) return;
    var said = xhr && /^text\/plain/.test(xhr.getResponseHeader("Content-Type") || "") ? xhr.responseText : "";
    box.textContent = (said || message || SESSION_ENDED) + " ";
    box.dataset.sessionEnded = "";
    box.hidden = false;
    window.clearTimeout(flashTimer);
    if (deactivated || HAICO.accountDeactivated(xhr)) return;
    var link = document.createElement("a");
    link.href = document.body.getAttribute("data-login-url") + "?next=" + encodeURIComponent(window.location.pathname);
    link.target = "_blank";
    link.rel = "noopener";
    link.textContent = "Log in again";
    box.appendChild(link);
  }

  HAICO.sessionEnded = sessionEnded;

  // The page has been told its session ended, and no request has gone through since.
  HAICO.sessionKnownEnded = function () {
    var box = document.getElementById("flash");
    return !!box && box.dataset.sessionEnded !== undefined;
  };

  function sentToLogIn(xhr) {
    var login = document.body.getAttribute("data-login-url");
    return !!(xhr && xhr.responseURL && login && new URL(xhr.responseURL).pathname === login);
  }

  HAICO.sentToLogIn = sentToLogIn;

  // A request went through, so the person the page is for is signed in:
  // the notice goes, and a socket closed when the session ended is opened
  // again (static/js/live.js).
  function signedInAgain() {
    var box = document.getElementById("flash");
    if (box && box.dataset.sessionEnded !== undefined) {
      box.hidden = true;
      delete box.dataset.sessionEnded;
    }
    document.dispatchEvent(new CustomEvent("haico:signedInAgain"));
  }

  HAICO.signedInAgain = signedInAgain;

  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful && !sentToLogIn(event.detail.xhr)) signedInAgain();
  });

  // A refusal the server could only answer for the whole page (a body too
  // big to read, something deleted in another tab): haico_site/middleware.py.
  document.addEventListener("haico:flash", function (event) {
    if (event.detail && event.detail.message) flash(event.detail.message);
  });

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    // A redirect to the login page that the browser followed (the server
    // answers a page's request with 401 instead, but a proxy may not): the
    // login page is not swapped into a panel, and the page is not left.
    if (sentToLogIn(xhr)) {
      event.detail.shouldSwap = false;
      sessionEnded(null);
    }
  });

  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (status === 401) {
      sessionEnded(event.detail.xhr);
    } else if (status === 404) {
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
