/* The document's history: versions, diffs, restore. Loaded after
 * document_editor.js (HAICO.documentEditor).
 *
 * The history opens beside the editor (outside its form), so opening it
 * never touches the text in the editor. Restoring a version is a new save
 * on the server; its answer carries the document's new text as a live
 * patch, which goes in through offerPatch like any other. With unsaved
 * text in the editor the person is asked first, and that text is saved
 * (kept in the history as its own version) before the restore.
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
  var editor = HAICO.documentEditor;
  var currentForm = editor.currentForm, editorState = editor.editorState;
  var hasUnsavedWork = editor.hasUnsavedWork, whenSaved = editor.whenSaved;

  function historyButton() {
    return document.querySelector("[data-doc-history-open]");
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target : null;
    if (target && target.closest("[data-doc-restored-dismiss]")) return hideRestoreNotice();
    if (target && target.closest("[data-doc-restored-history]")) {
      hideRestoreNotice();
      var open = historyButton();
      if (open) open.click();
      return;
    }
    var close = target && target.closest("[data-doc-history-close]");
    if (!close) return;
    var region = document.getElementById("doc-history");
    if (region) { region.hidden = true; region.innerHTML = ""; }
    var button = historyButton();
    if (button) { button.setAttribute("aria-expanded", "false"); button.focus(); }
  });

  // htmx:load fires on the history each time it arrives (opened, or after
  // a restore), and on the centre each time it is drawn again.
  document.addEventListener("htmx:load", function (event) {
    var region = event.target;
    if (region && region.id === "panel-centre") return centreDrawn();
    if (!region || region.id !== "doc-history") return;
    var button = historyButton();
    if (button) button.setAttribute("aria-expanded", "true");
    // Focus moves into it only when the person came from the History
    // button or from inside it (a restore): never out of the editor.
    var active = document.activeElement;
    var fromHistory = !active || active === document.body || active.hasAttribute("data-doc-history-open");
    var heading = region.querySelector("#doc-history-title");
    if (heading && fromHistory) heading.focus();
  });

  // Someone else restored an earlier version: what was saved after it,
  // this person's words among them perhaps, left the text. The editor took
  // the new text like any other; this says whose restore it was and where
  // the words are kept (docs/adr/0164). Said once, and only by a page that
  // was open before that version (a page opened later does not repeat it).
  // A page showing an artifact then has no editor: it keeps the restore and
  // says it when the document is shown again. The notice is made here when
  // needed: the page carries none of it.
  var heldRestore = null;

  function noteRestore(template) {
    if (!template.hasAttribute("data-restored-from")) return;
    var form = currentForm();
    var version = parseInt(template.getAttribute("data-version"), 10);
    var told = form ? (editorState(form).restoreTold || editorState(form).builtWith) : shownVersion();
    if (!(version > told) || (heldRestore && !(version > heldRestore.version))) return;
    if (form) editorState(form).restoreTold = version;
    if (template.getAttribute("data-restored-by-id") === document.body.getAttribute("data-person")) {
      heldRestore = null;
      return;
    }
    var restore = {
      version: version,
      from: template.getAttribute("data-restored-from"),
      who: template.getAttribute("data-restored-by") || "Someone",
    };
    if (form) tellRestore(form, restore);
    else heldRestore = restore;
  }

  // With an artifact on show: the document's version when it was drawn.
  function shownVersion() {
    var panel = document.getElementById("panel-centre");
    return (panel && parseInt(panel.getAttribute("data-document-version"), 10)) || 0;
  }

  function tellRestore(form, restore) {
    heldRestore = null;
    var notice = restoreNotice(form);
    notice.hidden = false;
    notice.querySelector("p").textContent = restore.who + " restored version " + restore.from +
      " of the document as version " + restore.version + ", which undid the changes saved after version " +
      restore.from + ". The history keeps every version.";
  }

  // The document shown again after an artifact: a restore that came
  // meanwhile is said now, above the editor built with its text. One whose
  // push comes after that editor was drawn is still news to this page: the
  // editor counts restores from the version the artifact was shown with.
  var artifactShownWith = currentForm() ? 0 : shownVersion();

  function centreDrawn() {
    var form = currentForm();
    if (!form) {
      artifactShownWith = shownVersion();
      return;
    }
    if (heldRestore) {
      editorState(form).restoreTold = heldRestore.version;
      tellRestore(form, heldRestore);
    } else if (artifactShownWith) {
      editorState(form).restoreTold = artifactShownWith;
    }
    artifactShownWith = 0;
  }

  function restoreNotice(form) {
    var notice = form.querySelector("[data-doc-restored]");
    if (notice) return notice;
    notice = document.createElement("div");
    notice.className = "centre-banner doc-restored";
    notice.setAttribute("data-doc-restored", "");
    notice.setAttribute("role", "status");
    notice.innerHTML = '<p></p><button type="button" class="btn btn-small" data-doc-restored-history>Show the history</button>' +
      '<button type="button" class="btn btn-quiet btn-small" data-doc-restored-dismiss>Dismiss</button>';
    var conflict = form.querySelector("#doc-conflict");
    form.insertBefore(notice, conflict ? conflict.nextSibling : form.firstChild);
    return notice;
  }

  function hideRestoreNotice() {
    var notice = document.querySelector("[data-doc-restored]");
    if (notice) notice.hidden = true;
  }

  // A version saved while the history is open (the agent, another tab): say
  // so and offer the latest, rather than replacing what the person reads.
  // Called by document_editor.js's one "haico:document-patch" listener.
  function notePatch(template) {
    noteRestore(template);
    var region = document.getElementById("doc-history");
    if (!region || region.hidden || !region.hasAttribute("data-current-version")) return;
    var version = parseInt(template.getAttribute("data-version"), 10);
    if (!(version > parseInt(region.getAttribute("data-current-version"), 10))) return;
    var note = region.querySelector("[data-doc-history-newer]");
    if (note) note.hidden = false;
  }

  document.addEventListener("htmx:confirm", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-doc-restore")) return;
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    var version = elt.getAttribute("data-doc-restore");
    if (!window.confirm("You have edits in the editor that are not saved yet. Save them first (they stay in the " +
        "history as their own version) and then restore version " + version + "?")) return;
    whenSaved(form, function () { event.detail.issueRequest(true); }, function () {
      var region = document.getElementById("doc-history");
      var note = region && region.querySelector("[data-doc-history-note]");
      if (!note && region) {
        note = document.createElement("p");
        note.className = "doc-history-message doc-alert doc-alert-error";
        note.setAttribute("role", "alert");
        note.setAttribute("data-doc-history-note", "");
        region.insertBefore(note, region.children[1] || null);
      }
      if (note) note.textContent = "Your edits could not be saved (the editor says why), so nothing was restored.";
    });
  });

  // The restore is based on the version the editor holds now (after the
  // save above), so anything written since is merged, never overwritten.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-doc-restore")) return;
    var form = currentForm();
    var version = form ? editorState(form).acked.version : NaN;
    if (!isNaN(version)) event.detail.parameters.base_version = String(version);
  });

  HAICO.documentHistory = { notePatch: notePatch };
})();
