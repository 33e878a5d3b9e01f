/* The document's preview: it follows the typing, scrolls with the editor,
 * and the edit / split / preview modes. Loaded after document_editor.js
 * (HAICO.documentEditor).
 *
 * A moment after the person stops typing, the editor's text is rendered by
 * the server (the one markdown renderer, workspace/markdown.py) without
 * saving it. Answers that come back out of order are dropped; a save's or
 * a live patch's preview of older text is followed by a fresh render.
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
  var editor = HAICO.documentEditor;
  var currentForm = editor.currentForm, editorState = editor.editorState, tooLong = editor.tooLong;
  var MODE_KEY = "haico.docMode";

  var PREVIEW_DELAY_MS = 250;

  function schedulePreview(form) {
    var state = editorState(form);
    clearTimeout(state.previewTimer);
    state.previewTimer = setTimeout(function () { renderPreview(form); }, PREVIEW_DELAY_MS);
  }

  function renderPreview(form) {
    var state = editorState(form);
    var url = form.dataset.previewUrl;
    if (!url || !form.isConnected || tooLong(form)) return;
    var content = form.elements.content.value;
    if (content === state.previewed) return;
    var ticket = (state.previewTicket || 0) + 1;
    state.previewTicket = ticket;
    var body = new FormData();
    body.append("content", content);
    fetch(url, { method: "POST", body: body, credentials: "same-origin", headers: HAICO.requestHeaders() })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        var preview = document.getElementById("doc-preview");
        if (html === null || !preview || ticket !== state.previewTicket) return;
        showPreview(preview, html);
        state.previewed = content;
        syncPreviewScroll(form);
      })
      .catch(function () { /* offline: the preview catches up with the next change */ });
  }

  document.addEventListener("input", function (event) {
    if (!event.target.matches || !event.target.matches("#doc-form textarea[name=content]")) return;
    schedulePreview(event.target.form);
  });

  // New preview HTML goes in touching only the top-level blocks that differ
  // from what is shown: a long document's preview is not built and laid out
  // again whole for one changed paragraph (docs/adr/0042).
  function showPreview(preview, html) {
    var incoming = document.createElement("template");
    incoming.innerHTML = html;
    var shown = preview.childNodes, fresh = incoming.content.childNodes;
    var head = 0;
    while (head < shown.length && head < fresh.length && shown[head].isEqualNode(fresh[head])) head++;
    var tail = 0;
    while (tail < shown.length - head && tail < fresh.length - head &&
           shown[shown.length - 1 - tail].isEqualNode(fresh[fresh.length - 1 - tail])) tail++;
    var before = tail ? shown[shown.length - tail] : null;
    for (var n = shown.length - tail - 1; n >= head; n--) preview.removeChild(shown[n]);
    Array.prototype.slice.call(fresh, head, fresh.length - tail).forEach(function (node) {
      preview.insertBefore(node, before);
    });
  }

  // A preview put in from elsewhere (a save's answer, a live patch, a
  // restore) is of newer text than a render still on its way, which a busy
  // server may answer after it: that answer is dropped, not shown over it.
  function dropRendersOnTheirWay(form) {
    var state = editorState(form);
    state.previewTicket = (state.previewTicket || 0) + 1;
    state.previewed = null;
  }

  // Something else fills the preview (a save's answer): patched in like the
  // typing's, and if the editor holds other text by now, that is rendered instead.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (!target || target.id !== "doc-preview" || !target.isConnected) return;
    var fragment = event.detail.fragment;
    var incoming = fragment && (fragment.firstElementChild || fragment);
    if (!incoming || incoming.id !== "doc-preview") return;
    event.preventDefault();
    showPreview(target, incoming.innerHTML);
    var form = currentForm();
    if (!form) return;
    dropRendersOnTheirWay(form);
    if (editorState(form).dirty) schedulePreview(form);
  });

  // The preview scrolls with the editor, at the same proportion of its length.
  function syncPreviewScroll(form) {
    var editor = form.elements.content;
    var pane = form.querySelector(".doc-preview-pane");
    if (!editor || !pane) return;
    var range = editor.scrollHeight - editor.clientHeight;
    var ratio = range > 0 ? editor.scrollTop / range : 0;
    pane.scrollTop = ratio * (pane.scrollHeight - pane.clientHeight);
  }

  document.addEventListener("scroll", function (event) {
    var target = event.target;
    if (target && target.matches && target.matches("#doc-form textarea[name=content]")) syncPreviewScroll(target.form);
  }, true);

  // --- edit / preview modes -------------------------------------------------------

  function applyMode(root, mode) {
    var panes = root.querySelector("[data-doc-panes]");
    if (!panes || ["edit", "split", "preview"].indexOf(mode) < 0) return;
    panes.dataset.mode = mode;
    root.querySelectorAll("[data-doc-mode]").forEach(function (button) {
      button.setAttribute("aria-pressed", button.dataset.docMode === mode ? "true" : "false");
    });
  }

  function restoreMode(root) {
    var mode = null;
    try { mode = localStorage.getItem(MODE_KEY); } catch (e) { /* private mode */ }
    if (mode) applyMode(root, mode);
  }

  document.addEventListener("click", function (event) {
    var mode = event.target.closest && event.target.closest("#panel-centre [data-doc-mode]");
    if (!mode) return;
    applyMode(mode.closest("#panel-centre"), mode.dataset.docMode);
    try { localStorage.setItem(MODE_KEY, mode.dataset.docMode); } catch (e) { /* private mode */ }
  });

  // --- (re)initialise new content: first load, htmx swaps, WebSocket pushes ----------------

  function init(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var panel = scope.id === "panel-centre" ? scope : scope.querySelector("#panel-centre");
    if (panel) restoreMode(panel);
  }

  // htmx fires htmx:load on every element it inserts, including out-of-band
  // swaps from the WebSocket, and once on <body> at start-up.
  document.addEventListener("htmx:load", function (event) { init(event.target); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { init(document); });
  } else {
    init(document);
  }

  // document_editor.js puts a patch's preview in with it.
  HAICO.preview = {
    show: function (preview, html) {
      var form = currentForm();
      if (form) dropRendersOnTheirWay(form);
      showPreview(preview, html);
    },
  };
})();
