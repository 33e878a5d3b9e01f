/* The review of the agent's changes: Keep / Undo per hunk (docs/adr/0019).
 * Loaded after document_editor.js (HAICO.documentEditor).
 *
 * Every document patch carries the review as it now stands; it replaces
 * the one shown whatever the editor is doing (the text itself goes in
 * through offerPatch). The answer to this tab's last Keep / Undo stays
 * until the next one. An Undo is a new save on the server, so unsaved
 * text in the editor is saved first (merged like any save): an undo is
 * then checked against everything the person typed.
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
  var editor = HAICO.documentEditor;
  var currentForm = editor.currentForm, hasUnsavedWork = editor.hasUnsavedWork, whenSaved = editor.whenSaved;

  // While this tab's Keep / Undo is on its way, a pushed review waits: the
  // button that asked must stay in the page for its answer to be shown. A
  // review older than the one shown (pushes and answers may cross) is dropped.
  var reviewAsking = null; // the button whose request is on its way
  var reviewRequest = null; // and that request: the answer replaces the button
  var heldReview = null;

  function stamp(element) {
    return parseInt(element.getAttribute("data-review-stamp") || "0", 10);
  }

  function replaceReview(incoming) {
    var shown = document.getElementById("doc-review");
    if (!shown || !incoming) return;
    if (reviewAsking) { heldReview = incoming; return; }
    if (stamp(incoming) < stamp(shown)) return;
    var message = shown.querySelector("[data-review-message]");
    var fresh = document.importNode(incoming, true);
    if (message && !fresh.querySelector("[data-review-message]")) {
      var header = fresh.querySelector(".doc-review-header");
      if (header) header.after(message); else fresh.prepend(message);
      fresh.hidden = false;
    }
    var focusedHunk = reviewFocus();
    shown.replaceWith(fresh);
    htmx.process(fresh);
    restoreReviewFocus(fresh, focusedHunk);
  }

  // Called by document_editor.js's one "haico:document-patch" listener.
  function notePatch(template) {
    replaceReview(template.content.querySelector("#doc-review"));
  }

  // Where focus was in the review, as the place of its hunk in the list, so
  // it lands on the hunk that took that place (not on the page's body).
  var pendingReviewFocus = null;

  function reviewFocus() {
    var active = document.activeElement;
    var region = document.getElementById("doc-review");
    if (!region || !active || !region.contains(active)) return pendingReviewFocus;
    var hunk = active.closest(".doc-review-hunk");
    return hunk ? Array.prototype.indexOf.call(hunk.parentNode.children, hunk) : -1;
  }

  function restoreReviewFocus(region, place) {
    if (place === null || place === undefined) return;
    pendingReviewFocus = null;
    var hunks = region.querySelectorAll(".doc-review-hunk");
    var target = null;
    if (hunks.length) target = hunks[Math.min(Math.max(place, 0), hunks.length - 1)].querySelector("button");
    if (!target) target = region.querySelector("[data-review-message]") || region.querySelector("#doc-review-title");
    if (target) {
      if (!target.matches("button")) target.setAttribute("tabindex", "-1");
      target.focus();
    }
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.closest || !elt.closest("#doc-review")) return;
    pendingReviewFocus = reviewFocus();
    reviewAsking = elt;
    reviewRequest = event.detail.xhr;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    // By the request, not the element: the answer's review replaced the
    // button, so htmx tells its end on an ancestor still in the page. Told
    // by element, the tab held every later review (another tab's answer,
    // the next turn's changes) until it was reloaded.
    if (!reviewAsking || !event.detail.xhr || event.detail.xhr !== reviewRequest) return;
    // The answer is swapped in by now (or failed): a review pushed meanwhile goes in if it is newer.
    reviewAsking = null;
    reviewRequest = null;
    var held = heldReview;
    heldReview = null;
    if (held) replaceReview(held);
  });

  document.addEventListener("htmx:load", function (event) {
    var region = event.target;
    if (region && region.id === "doc-review" && pendingReviewFocus !== null) restoreReviewFocus(region, pendingReviewFocus);
  });

  document.addEventListener("htmx:confirm", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-doc-review-undo")) return;
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    whenSaved(form, function () { event.detail.issueRequest(true); }, function () {
      var region = document.getElementById("doc-review");
      if (!region) return;
      var note = region.querySelector("[data-review-message]");
      if (!note) {
        note = document.createElement("p");
        note.setAttribute("data-review-message", "");
        note.setAttribute("role", "alert");
        var header = region.querySelector(".doc-review-header");
        if (header) header.after(note); else region.prepend(note);
      }
      note.className = "doc-review-message doc-alert doc-alert-error";
      note.textContent = "Your edits could not be saved (the editor says why), so nothing was undone.";
    });
  });

  HAICO.documentReview = { notePatch: notePatch };
})();
