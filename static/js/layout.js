/* HAICO workspace page: its layout at every width (docs/adr/0022, 0055).
 *
 * - Side rails collapse from the top bar; the choice is saved for the person
 *   (conversations.views.layout_save) so every device opens the same way.
 * - On a phone the page shows one view at a time behind the tabs
 *   Workspace / Document / Chat (roving tab stop, arrow keys move); between
 *   768 and 1279 px the document keeps its column and the tabs Workspace /
 *   Chat choose the rail beside it (the Chat rail unless Workspace is chosen).
 * - Skip links focus the Message box or the document text, opening the tab
 *   that holds it first.
 * - The add forms of Preferences and the plan open from a compact "Add"
 *   control; a row the person just added is scrolled into view.
 * - The thread switcher: a dialog searching the person's own threads.
 * - Top bar rename: the form closes once the new title is in.
 * Everything is delegated from document (static/js/workspace.js does the same).
 */
(function () {
  "use strict";

  var grid = document.querySelector(".workspace-grid");
  if (!grid) return;
  var narrow = window.matchMedia("(max-width: 767.98px)");
  var twoColumns = window.matchMedia("(min-width: 768px) and (max-width: 1279.98px)");

  // --- side rails ---------------------------------------------------------------
  function saveRail(rail, collapsed) {
    var box = document.querySelector("[data-layout-url]");
    if (!box || !window.fetch) return;
    var body = new URLSearchParams({ rail: rail, collapsed: collapsed ? "on" : "" });
    var headers = window.HAICO.requestHeaders();
    window.fetch(box.getAttribute("data-layout-url"), {
      method: "POST", body: body, headers: headers, credentials: "same-origin",
    }).catch(function () {
      if (window.HAICO && window.HAICO.flash) window.HAICO.flash("Could not save the layout; it applies to this page only.");
    });
  }

  function toggleRail(button) {
    var rail = button.getAttribute("data-rail-toggle");
    var collapsed = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", String(!collapsed));
    grid.classList.toggle("is-" + rail + "-collapsed", collapsed);
    saveRail(rail, collapsed);
  }

  // --- tabs below laptop width ------------------------------------------------------
  // The tabs that show: beside the document (two columns) there is no Document tab.
  function tabs() {
    return Array.prototype.slice.call(document.querySelectorAll(".workspace-tabs [role=tab]")).filter(function (tab) {
      return !(twoColumns.matches && tab.getAttribute("data-tab") === "document");
    });
  }

  // The view shown beside the document in two columns: the Chat rail
  // unless the Workspace one was chosen.
  function shownTab() {
    var name = grid.getAttribute("data-tab");
    return twoColumns.matches && name !== "workspace" ? "chat" : name;
  }

  function markTabs(focus) {
    var shown = shownTab();
    tabs().forEach(function (tab) {
      var on = tab.getAttribute("data-tab") === shown;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    });
  }

  function selectTab(name, focus) {
    // Two columns show the document whichever tab is chosen.
    if (twoColumns.matches && name === "document") return;
    grid.setAttribute("data-tab", name);
    markTabs(focus);
  }

  // The views are tab panels only while tabs choose them.
  function applyWidth() {
    ["rail-left", "centre-column", "rail-right"].forEach(function (id) {
      var panel = document.getElementById(id);
      if (!panel) return;
      var tabbed = narrow.matches || (twoColumns.matches && id !== "centre-column");
      if (tabbed) panel.setAttribute("role", "tabpanel");
      else panel.removeAttribute("role");
    });
    markTabs(false);
  }
  [narrow, twoColumns].forEach(function (query) {
    if (query.addEventListener) query.addEventListener("change", applyWidth);
  });
  applyWidth();

  // Which tab holds an element (for skip links and a focus moving elsewhere).
  function tabOf(el) {
    if (el.closest("#rail-left")) return "workspace";
    if (el.closest("#rail-right")) return "chat";
    return "document";
  }

  function tabbed() {
    return narrow.matches || twoColumns.matches;
  }

  function reveal(el) {
    if (tabbed()) selectTab(tabOf(el), false);
    var rail = el.closest(".rail");
    var side = rail && (rail.id === "rail-left" ? "left" : "right");
    if (side && !tabbed() && grid.classList.contains("is-" + side + "-collapsed")) {
      var button = document.querySelector('[data-rail-toggle="' + side + '"]');
      if (button) toggleRail(button);
    }
  }

  // Other scripts show what needs the person (an approval card) this way.
  window.HAICO = window.HAICO || {};
  window.HAICO.revealView = reveal;

  // --- skip links ---------------------------------------------------------------------
  // In order of preference: an artifact on show has no document text, so
  // the document link lands on the "Show" selector that leads back to it.
  var SKIP_TARGETS = {
    chat: ['#panel-chat textarea[name="message"]'],
    document: ["#panel-centre textarea.doc-content", "#panel-centre select.centre-select"],
  };

  function skipTo(name) {
    var target = null;
    SKIP_TARGETS[name].some(function (selector) { return (target = document.querySelector(selector)); });
    if (!target) return;
    reveal(target);
    target.focus();
  }

  // --- add forms ------------------------------------------------------------------------
  function setAddOpen(toggle, open) {
    var form = document.getElementById(toggle.getAttribute("aria-controls"));
    if (!form) return;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) {
      form.removeAttribute("data-collapsed");
      var field = form.querySelector("input[type=text], select");
      if (field) field.focus();
    } else {
      form.setAttribute("data-collapsed", "");
      if (form.contains(document.activeElement)) toggle.focus();
    }
  }

  // The row a person is adding: the panel's rows before the request, so the
  // first row that was not there is the new one, whichever way it arrives
  // (the HTMX answer or the socket's push).
  var adding = null;

  function rowIds(panel) {
    var ids = {};
    panel.querySelectorAll("li[id]").forEach(function (li) { ids[li.id] = true; });
    return ids;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.detail.elt && event.detail.elt.closest && event.detail.elt.closest(".add-form");
    var panel = form && form.closest("[data-live-panel]");
    if (panel) adding = { panelId: panel.id, known: rowIds(panel), until: Date.now() + 15000 };
  });

  new MutationObserver(function () {
    if (!adding) return;
    var panel = document.getElementById(adding.panelId);
    if (!panel || Date.now() > adding.until) {
      adding = null;
      return;
    }
    var rows = panel.querySelectorAll("li[id]");
    for (var i = 0; i < rows.length; i++) {
      if (!adding.known[rows[i].id]) {
        adding = null;
        rows[i].scrollIntoView({ block: "nearest" });
        return;
      }
    }
  }).observe(grid, { childList: true, subtree: true });

  // --- thread switcher ----------------------------------------------------------------------
  function openSwitcher() {
    var dialog = document.getElementById("thread-switcher");
    if (!dialog || dialog.open) return;
    dialog.showModal();
    var search = dialog.querySelector("input[type=search]");
    search.focus();
    if (window.htmx) window.htmx.trigger(search, "haico:load");
  }

  // --- the owner's Share dialog (templates/conversations/panels/share.html) ---------------------
  function openShare() {
    var dialog = document.getElementById("share-dialog");
    if (!dialog || dialog.open) return;
    var body = document.getElementById("share-body");
    if (window.htmx && body && body.children.length) {
      // Opened again it would show the list it held until the fresh one
      // replaces it, and a role chosen in the old list would be lost with it.
      var loading = document.createElement("p");
      loading.className = "muted";
      loading.textContent = "Loading…";
      body.replaceChildren(loading);
    }
    dialog.showModal();
    if (window.htmx && body) window.htmx.trigger(body, "haico:load");
  }

  // --- top bar rename -------------------------------------------------------------------------
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (!form.classList || !form.classList.contains("topbar-rename")) return;
    // A refusal answers with an empty body and a flash; the form stays open.
    if (event.detail.successful && event.detail.xhr.responseText.trim() && window.HAICO.closeForms) {
      var scope = form.closest("[data-edit-scope]");
      window.HAICO.closeForms(scope);
      var again = scope.querySelector("[data-edit-open]");
      if (again) again.focus();
    }
  });

  // --- the review of an agent turn's changes folds (docs/adr/0056) --------------------------------
  // The server folds the review of an older turn; a person's own choice for
  // a review (this thread, that turn) is remembered in this browser and
  // applied again whenever the review is replaced (a push, a Keep or Undo).
  function reviewKey(region) {
    return "haico:review-folded:" + grid.getAttribute("data-thread-id") + ":" + region.getAttribute("data-review-turn");
  }

  function setFolded(region, folded) {
    var button = region.querySelector("[data-review-fold]");
    if (!button) return;
    region.classList.toggle("is-folded", folded);
    button.setAttribute("aria-expanded", String(!folded));
    button.textContent = folded ? "Show changes" : "Hide changes";
  }

  // --- a pane that scrolls is a Tab stop (the document's preview) ---------------------------------
  // Only while it has more than it shows: an empty preview is no stop on the way to the chat.
  var resized = window.ResizeObserver ? new ResizeObserver(function () { markScrollable(); }) : null;
  var watched = new WeakSet();
  function markScrollable() {
    document.querySelectorAll(".doc-preview-pane").forEach(function (pane) {
      if (resized && !watched.has(pane)) { watched.add(pane); resized.observe(pane); }
      var scrolls = pane.scrollHeight > pane.clientHeight + 1;
      if (scrolls && !pane.hasAttribute("tabindex")) pane.setAttribute("tabindex", "0");
      else if (!scrolls && pane.hasAttribute("tabindex")) pane.removeAttribute("tabindex");
    });
  }

  var shownReview = null;
  function applyRememberedFold() {
    var region = document.getElementById("doc-review");
    if (!region || region === shownReview) return;
    shownReview = region;
    var remembered = null;
    try { remembered = localStorage.getItem(reviewKey(region)); } catch (e) { /* private mode */ }
    if (remembered !== null) setFolded(region, remembered === "1");
  }
  new MutationObserver(function () {
    applyRememberedFold();
    markScrollable();
  }).observe(document.getElementById("centre-column") || grid, { childList: true, subtree: true });
  applyRememberedFold();
  markScrollable();

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-review-fold]");
    var region = button && button.closest("#doc-review");
    if (!region) return;
    var folded = !region.classList.contains("is-folded");
    setFolded(region, folded);
    try { localStorage.setItem(reviewKey(region), folded ? "1" : "0"); } catch (e) { /* private mode */ }
  });

  // --- events -----------------------------------------------------------------------------------
  document.addEventListener("click", function (event) {
    var railButton = event.target.closest("[data-rail-toggle]");
    if (railButton) return toggleRail(railButton);
    var tab = event.target.closest(".workspace-tabs [role=tab]");
    if (tab) return selectTab(tab.getAttribute("data-tab"), true);
    var skip = event.target.closest("[data-skip]");
    if (skip) {
      event.preventDefault();
      return skipTo(skip.getAttribute("data-skip"));
    }
    var addToggle = event.target.closest("[data-add-toggle]");
    if (addToggle) return setAddOpen(addToggle, addToggle.getAttribute("aria-expanded") !== "true");
    if (event.target.closest("[data-switcher-open]")) return openSwitcher();
    if (event.target.closest("[data-share-open]")) return openShare();
    if (event.target.closest("[data-share-close]")) return document.getElementById("share-dialog").close();
    if (event.target.id === "share-dialog") event.target.close();
    if (event.target.closest("[data-switcher-close]")) return document.getElementById("thread-switcher").close();
    // A click on the dialog's backdrop closes it.
    if (event.target.id === "thread-switcher") event.target.close();
  });

  document.addEventListener("keydown", function (event) {
    var tab = event.target.closest && event.target.closest(".workspace-tabs [role=tab]");
    if (tab && (event.key === "ArrowRight" || event.key === "ArrowLeft" || event.key === "Home" || event.key === "End")) {
      var all = tabs();
      var at = all.indexOf(tab);
      var next = event.key === "Home" ? 0 : event.key === "End" ? all.length - 1
        : (at + (event.key === "ArrowRight" ? 1 : all.length - 1)) % all.length;
      event.preventDefault();
      selectTab(all[next].getAttribute("data-tab"), true);
      return;
    }
    // Escape in the switcher's search box would only clear it.
    var switcher = event.key === "Escape" && event.target.closest && event.target.closest("#thread-switcher");
    if (switcher) {
      event.preventDefault();
      switcher.close();
      return;
    }
    var form = event.key === "Escape" && event.target.closest && event.target.closest(".add-form");
    if (form) {
      var toggle = document.querySelector('[data-add-toggle][aria-controls="' + form.id + '"]');
      if (toggle) {
        event.preventDefault();
        setAddOpen(toggle, false);
      }
    }
  });

  // A turn's preview (docs/adr/0016) opens over the document: on a phone
  // the node was tapped in the Chat view, so show the Document view.
  document.addEventListener("htmx:afterSettle", function (event) {
    var path = (event.detail && event.detail.pathInfo && event.detail.pathInfo.requestPath) || "";
    if (narrow.matches && path.indexOf("/trajectory/") !== -1 && document.querySelector("section#trajectory-preview")) {
      selectTab("document", false);
    }
  });

  // Focus landing in a view the tabs hide (a form live.js opens, a find in
  // page) shows that view.
  document.addEventListener("focusin", function (event) {
    if (tabbed() && grid.contains(event.target) && tabOf(event.target) !== shownTab()) {
      selectTab(tabOf(event.target), false);
    }
  });
})();
