/* The centre panel: document autosave, merges and conflicts, Chart.js
 * charts, sortable tables. No build step; loaded on every workspace page.
 *
 * The one rule behind the document code: text the person typed is never
 * replaced by anything the server sends until it is saved (merged with what
 * changed meanwhile, docs/adr/0013) or they choose what to keep.
 */
(function () {
  "use strict";

  var AUTOSAVE_DELAY_MS = 1500;
  var MODE_KEY = "haico.docMode";
  var HAICO = (window.HAICO = window.HAICO || {});

  // --- per-editor state, kept on the form element itself ----------------------
  //
  // dirty: the editor holds text the server does not have (until a save of
  //   exactly that text succeeds); inFlight: a save is on its way; sent /
  //   sentBase: what it carries and the version it is based on; conflict:
  //   the conflict view is open; resolve: the choice the next save carries.

  function editorState(form) {
    if (!form.__haico) {
      form.__haico = {
        dirty: false, timer: null, inFlight: false, sent: null, sentBase: null,
        conflict: false, resolve: null, returnToEditor: false, waiters: [],
      };
    }
    return form.__haico;
  }

  function currentForm() {
    return document.getElementById("doc-form");
  }

  function values(form) {
    return { title: form.elements.title.value, content: form.elements.content.value };
  }

  function baseField(form) {
    return form.querySelector("input[name=base_version]");
  }

  function baseVersion(form) {
    var field = baseField(form);
    return field ? parseInt(field.value, 10) : NaN;
  }

  function setStatus(form, text, state) {
    var holder = form.querySelector("#doc-save-state");
    if (!holder) return;
    var status = holder.querySelector("[data-doc-status]");
    if (status) status.textContent = text;
    if (state) holder.dataset.state = state;
  }

  function showLocalError(form, message) {
    var holder = form.querySelector("#doc-save-state");
    if (!holder) return;
    var alert = holder.querySelector(".doc-alert-local");
    if (!alert) {
      alert = document.createElement("div");
      alert.className = "doc-alert doc-alert-error doc-alert-local";
      alert.setAttribute("role", "alert");
      holder.appendChild(alert);
    }
    alert.textContent = message;
    setStatus(form, "Not saved", "error");
  }

  function clearLocalError(form) {
    var alert = form.querySelector(".doc-alert-local");
    if (alert) alert.remove();
  }

  function hasUnsavedWork(form) {
    var state = editorState(form);
    return state.dirty || state.inFlight || state.conflict;
  }

  // --- autosave ----------------------------------------------------------------

  function scheduleSave(form) {
    var state = editorState(form);
    state.dirty = true;
    if (!state.conflict) setStatus(form, "Unsaved changes");
    clearTimeout(state.timer);
    state.timer = setTimeout(function () { saveNow(form); }, AUTOSAVE_DELAY_MS);
  }

  function tooLong(form) {
    var limit = parseInt(form.dataset.maxChars || "0", 10);
    if (!limit) return null;
    // Count characters the way the server does (code points, not UTF-16 units).
    var length = Array.from(form.elements.content.value).length;
    if (length <= limit) return null;
    return "The document is too long (" + length.toLocaleString() + " characters; the limit is " +
      limit.toLocaleString() + "). Nothing was saved; shorten it to save again.";
  }

  function saveNow(form) {
    var state = editorState(form);
    clearTimeout(state.timer);
    state.timer = null;
    if (!form.isConnected) return false;
    var problem = tooLong(form);
    if (problem) {
      showLocalError(form, problem);
      failWaiters(form);
      return false;
    }
    clearLocalError(form);
    htmx.trigger(form, "haico:save");
    return true;
  }

  // Run `then` once everything typed is saved; `otherwise` if the save
  // fails or conflicts (the message is on screen and the text stays).
  function whenSaved(form, then, otherwise) {
    var state = editorState(form);
    if (!state.dirty && !state.inFlight) { then(); return; }
    state.waiters.push({ then: then, otherwise: otherwise });
    if (!state.inFlight) saveNow(form);
  }

  function failWaiters(form) {
    var waiters = editorState(form).waiters.splice(0);
    waiters.forEach(function (w) { if (w.otherwise) w.otherwise(); });
  }

  function same(a, b) {
    return !!a && !!b && a.title === b.title && a.content === b.content;
  }

  // The server has exactly what the editor shows: done, and whoever waited goes on.
  function savedAll(form) {
    var state = editorState(form);
    state.dirty = false;
    var waiters = state.waiters.splice(0);
    waiters.forEach(function (w) { w.then(); });
  }

  function settle(form, outcome, holder) {
    var state = editorState(form);
    var sent = state.sent;
    var typedMeanwhile = !same(values(form), sent);
    state.inFlight = false;
    if (outcome === "saved" || outcome === "merged") {
      state.conflict = false;
      if (outcome === "merged" && typedMeanwhile) {
        // The merged text lacks what was typed while the save was on its
        // way: stay on the version that text was edited from and save it
        // again at once, to be merged the same way.
        baseField(form).value = state.sentBase;
        saveNow(form);
      } else if (outcome === "merged") {
        adoptMerged(form, holder.querySelector("template[data-doc-merged]"));
        savedAll(form);
      } else if (!typedMeanwhile) {
        savedAll(form);
      } else if (state.waiters.length && !state.timer) {
        saveNow(form); // typed again while saving; someone is waiting to leave
      }
      if (state.returnToEditor && !state.inFlight) {
        state.returnToEditor = false;
        form.elements.content.focus();
      }
    } else {
      state.conflict = outcome === "conflict";
      state.returnToEditor = false;
      failWaiters(form);
    }
    applyHeldPatch(form);
  }

  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("#doc-form");
    if (!form || event.target.readOnly) return;
    scheduleSave(form);
  });

  document.addEventListener("submit", function (event) {
    // Enter in the title: save at once instead of waiting for the delay.
    if (event.target.id === "doc-form") clearTimeout(editorState(event.target).timer);
  }, true);

  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail.elt;
    if (!form || form.id !== "doc-form") return;
    var state = editorState(form);
    state.inFlight = true;
    state.sent = values(form);
    state.sentBase = baseField(form).value;
    if (state.resolve) {
      event.detail.parameters.resolve = state.resolve;
      state.resolve = null;
    }
    setStatus(form, "Saving…");
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (!form || form.id !== "doc-form") return;
    var xhr = event.detail.xhr;
    if (!xhr || xhr.status === 0 || xhr.status >= 300) {
      var reason = xhr && xhr.status ? "the server answered " + xhr.status : "the connection failed";
      showLocalError(form, "Not saved: " + reason + ". Your text is still here; it will be saved with your next change.");
      settle(form, "error");
      return;
    }
    var holder = document.getElementById("doc-save-state");
    settle(form, holder ? holder.dataset.state : "error", holder);
  });

  document.addEventListener("htmx:sendError", function (event) {
    var form = event.detail.elt;
    if (form && form.id === "doc-form" && editorState(form).inFlight) {
      showLocalError(form, "Not saved: the connection failed. Your text is still here; it will be saved with your next change.");
      settle(form, "error");
    }
  });

  // The conflict view's choices: save again, settling the overlaps that way.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#doc-conflict [data-doc-resolve]");
    var form = currentForm();
    if (!button || !form) return;
    var state = editorState(form);
    state.resolve = button.getAttribute("data-doc-resolve");
    state.returnToEditor = true;
    state.dirty = true;
    if (state.inFlight) {
      // hx-sync queues this save behind the one on its way.
      htmx.trigger(form, "haico:save");
    } else {
      saveNow(form);
    }
  });

  // Leaving the editor (the selector, "Show it"): save first, then go.
  document.addEventListener("htmx:confirm", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-leaves-editor")) return;
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    whenSaved(form, function () { event.detail.issueRequest(true); }, function () {
      if (elt.tagName === "SELECT") elt.value = "";
    });
  });

  // Leaving the page with text the server does not have: the browser asks first.
  window.addEventListener("beforeunload", function (event) {
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    event.returnValue = "";
  });

  // A closed tab must not lose the last second of typing (merged like any save).
  window.addEventListener("pagehide", function () {
    var form = currentForm();
    if (!form || !navigator.sendBeacon) return;
    var state = editorState(form);
    if (!state.dirty || state.inFlight || state.conflict || tooLong(form)) return;
    var data = new FormData(form);
    if (!data.has("csrfmiddlewaretoken")) {
      try {
        var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
        if (headers["X-CSRFToken"]) data.append("csrfmiddlewaretoken", headers["X-CSRFToken"]);
      } catch (e) { /* no token: the server refuses, nothing is overwritten */ }
    }
    navigator.sendBeacon(form.getAttribute("action"), data);
  });

  // Before a chat message goes, what the person typed in the document is
  // saved, so the turn's snapshot and the model's first call see it
  // (static/js/chat.js). Resolves true once saved, false if it could not be
  // (the document shows why; the message still goes).
  HAICO.documentSaved = function () {
    return new Promise(function (resolve) {
      var form = currentForm();
      if (!form || editorState(form).conflict) { resolve(!form); return; }
      whenSaved(form, function () { resolve(true); }, function () { resolve(false); });
    });
  };

  // --- the document changed elsewhere (the agent, another tab) ----------------------
  //
  // live.js hands over the new title, text and preview. With nothing unsaved
  // in this editor they go straight in, the caret and the scroll position kept
  // where they were relative to the text around them; while a save is on its
  // way the patch waits for it; over unsaved text the text is saved at once,
  // merged on the server with the new version, and the merged text comes
  // back in the save's answer.

  var heldPatch = null;

  function mapPosition(position, before, after) {
    var prefix = 0;
    var limit = Math.min(before.length, after.length);
    while (prefix < limit && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
    var suffix = 0;
    while (suffix < limit - prefix && before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)) suffix++;
    if (position <= prefix) return position;
    if (position >= before.length - suffix) return position + after.length - before.length;
    return after.length - suffix; // inside the changed span: just after the new text
  }

  // Put a saved version in the editor, keeping the caret and the scroll position.
  function putText(form, title, content, version) {
    var editor = form.elements.content;
    var before = editor.value;
    var focused = document.activeElement === editor;
    var start = editor.selectionStart, end = editor.selectionEnd, scroll = editor.scrollTop;
    if (content !== before) {
      editor.value = content;
      if (focused) editor.setSelectionRange(mapPosition(start, before, content), mapPosition(end, before, content));
      editor.scrollTop = scroll;
    }
    if (form.elements.title.value !== title) form.elements.title.value = title;
    baseField(form).value = version;
    var panel = form.closest("#panel-centre");
    if (panel) panel.setAttribute("data-document-version", version);
  }

  function adoptMerged(form, template) {
    if (!template) return;
    var fields = template.content;
    putText(form, fields.querySelector("input[name=title]").getAttribute("value") || "",
      fields.querySelector("textarea").value, template.getAttribute("data-version"));
  }

  function applyDocumentPatch(form, patch) {
    var fields = patch.content;
    putText(form, fields.querySelector("input[name=title]").getAttribute("value") || "",
      fields.querySelector("textarea").value, patch.getAttribute("data-version"));
    var preview = document.getElementById("doc-preview");
    var incoming = fields.querySelector("[data-preview]");
    if (preview && incoming) preview.innerHTML = incoming.innerHTML;
    editorState(form).previewed = null;
  }

  function offerPatch(form, patch) {
    var version = parseInt(patch.getAttribute("data-version"), 10);
    if (!(version > baseVersion(form))) return; // already here (this tab's own save)
    var state = editorState(form);
    if (state.inFlight) {
      heldPatch = patch;
    } else if (state.dirty || state.conflict) {
      heldPatch = null;
      saveNow(form); // merged with the new version on the server
    } else {
      heldPatch = null;
      applyDocumentPatch(form, patch);
    }
  }

  function applyHeldPatch(form) {
    var patch = heldPatch;
    heldPatch = null;
    if (patch && form.isConnected) offerPatch(form, patch);
  }

  document.addEventListener("haico:document-patch", function (event) {
    var form = currentForm();
    // With an artifact on show there is no editor: the document is read
    // fresh when the person goes back to it.
    if (form) offerPatch(form, event.detail.template.cloneNode(true));
  });

  // --- the document's history: versions, diffs, restore -----------------------------------
  //
  // The history opens beside the editor (outside its form), so opening it
  // never touches the text in the editor. Restoring a version is a new save
  // on the server; its answer carries the document's new text as a live
  // patch, which goes in through offerPatch like any other. With unsaved
  // text in the editor the person is asked first, and that text is saved
  // (kept in the history as its own version) before the restore.

  function historyButton() {
    return document.querySelector("[data-doc-history-open]");
  }

  document.addEventListener("click", function (event) {
    var close = event.target.closest && event.target.closest("[data-doc-history-close]");
    if (!close) return;
    var region = document.getElementById("doc-history");
    if (region) { region.hidden = true; region.innerHTML = ""; }
    var button = historyButton();
    if (button) { button.setAttribute("aria-expanded", "false"); button.focus(); }
  });

  // htmx:load fires on the history each time it arrives (opened, or after a restore).
  document.addEventListener("htmx:load", function (event) {
    var region = event.target;
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

  // A version saved while the history is open (the agent, another tab): say
  // so and offer the latest, rather than replacing what the person reads.
  document.addEventListener("haico:document-patch", function (event) {
    var region = document.getElementById("doc-history");
    if (!region || region.hidden || !region.hasAttribute("data-current-version")) return;
    var version = parseInt(event.detail.template.getAttribute("data-version"), 10);
    if (!(version > parseInt(region.getAttribute("data-current-version"), 10))) return;
    var note = region.querySelector("[data-doc-history-newer]");
    if (note) note.hidden = false;
  });

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
    var version = form ? baseVersion(form) : NaN;
    if (!isNaN(version)) event.detail.parameters.base_version = String(version);
  });

  // --- the review of the agent's changes: Keep / Undo per hunk (docs/adr/0019) -------------
  //
  // Every document patch carries the review as it now stands; it replaces
  // the one shown whatever the editor is doing (the text itself goes in
  // through offerPatch). The answer to this tab's last Keep / Undo stays
  // until the next one. An Undo is a new save on the server, so unsaved
  // text in the editor is saved first (merged like any save): an undo is
  // then checked against everything the person typed.

  // While this tab's Keep / Undo is on its way, a pushed review waits: the
  // button that asked must stay in the page for its answer to be shown. A
  // review older than the one shown (pushes and answers may cross) is dropped.
  var reviewAsking = null; // the button whose request is on its way
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

  document.addEventListener("haico:document-patch", function (event) {
    replaceReview(event.detail.template.content.querySelector("#doc-review"));
  });

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
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    if (!reviewAsking || event.detail.elt !== reviewAsking) return;
    // The answer is swapped in by now (or failed): a review pushed meanwhile goes in if it is newer.
    reviewAsking = null;
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

  // --- a new artifact from the agent ------------------------------------------------------

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var panel = event.detail.target;
    if (!panel || panel.id !== "panel-centre") return;
    var form = panel.querySelector("#doc-form");
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    var fragment = event.detail.fragment;
    var incoming = fragment && (fragment.firstElementChild || fragment);
    showAgentBanner(panel, incoming);
  });

  function showAgentBanner(panel, incoming) {
    var banner = panel.querySelector("[data-agent-banner]");
    if (!banner) return;
    var text = banner.querySelector("[data-agent-banner-text]");
    var artifactButton = banner.querySelector("[data-agent-banner-artifact]");
    var incomingSelect = incoming && incoming.querySelector && incoming.querySelector("select[name=artifact]");
    var select = panel.querySelector("select[name=artifact]");
    if (incomingSelect && select) {
      // Keep the selector current (new artifacts listed) without leaving the editor.
      var keep = select.value;
      select.innerHTML = incomingSelect.innerHTML;
      select.value = keep;
    }
    var artifactId = incoming && incoming.dataset ? incoming.dataset.artifactId : "";
    if (!(incoming && incoming.dataset && incoming.dataset.view === "artifact" && artifactId)) return;
    var option = incomingSelect && incomingSelect.querySelector("option[value='" + artifactId + "']");
    var label = option ? option.textContent.trim() : "a new artifact";
    text.textContent = "The agent added “" + label + "”; your unsaved edits are kept.";
    artifactButton.dataset.artifactId = artifactId;
    artifactButton.hidden = false;
    banner.hidden = false;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var panel = target.closest("#panel-centre");
    if (!panel) return;

    if (target.closest("[data-agent-banner-dismiss]")) {
      panel.querySelector("[data-agent-banner]").hidden = true;
      return;
    }
    var show = target.closest("[data-agent-banner-artifact]");
    if (show) {
      var url = panel.dataset.centreUrl + "?artifact=" + encodeURIComponent(show.dataset.artifactId);
      var go = function () { htmx.ajax("GET", url, { target: "#panel-centre", swap: "outerHTML" }); };
      var form = currentForm();
      if (form) whenSaved(form, go); else go();
      return;
    }
    var mode = target.closest("[data-doc-mode]");
    if (mode) {
      applyMode(panel, mode.dataset.docMode);
      try { localStorage.setItem(MODE_KEY, mode.dataset.docMode); } catch (e) { /* private mode */ }
    }
  });

  // --- the preview follows the typing --------------------------------------------
  //
  // A moment after the person stops typing, the editor's text is rendered by
  // the server (the one markdown renderer, workspace/markdown.py) without
  // saving it. Answers that come back out of order are dropped; a save's or
  // a live patch's preview of older text is followed by a fresh render.

  var PREVIEW_DELAY_MS = 250;

  function csrfToken(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) return field.value;
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; } catch (e) { return ""; }
  }

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
    body.append("csrfmiddlewaretoken", csrfToken(form));
    fetch(url, { method: "POST", body: body, credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        var preview = document.getElementById("doc-preview");
        if (html === null || !preview || ticket !== state.previewTicket) return;
        preview.innerHTML = html;
        state.previewed = content;
        syncPreviewScroll(form);
      })
      .catch(function () { /* offline: the preview catches up with the next change */ });
  }

  document.addEventListener("input", function (event) {
    if (!event.target.matches || !event.target.matches("#doc-form textarea[name=content]")) return;
    schedulePreview(event.target.form);
  });

  // Something else filled the preview (a save, another tab's change): if the
  // editor holds other text by now, render that instead.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var form = currentForm();
    if (!form || !event.detail.target || event.detail.target.id !== "doc-preview") return;
    editorState(form).previewed = null;
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

  // --- charts -----------------------------------------------------------------------

  function initCharts(root) {
    if (!window.Chart) return;
    Object.values(Chart.instances || {}).forEach(function (chart) {
      if (!chart.canvas || !chart.canvas.isConnected) chart.destroy();
    });
    root.querySelectorAll("canvas[data-chart-config]").forEach(function (canvas) {
      if (Chart.getChart(canvas)) return;
      var scope = canvas.closest(".artifact") || document;
      var script = scope.querySelector("#" + CSS.escape(canvas.dataset.chartConfig));
      if (!script) return;
      try {
        new Chart(canvas, JSON.parse(script.textContent));
      } catch (e) {
        canvas.replaceWith(Object.assign(document.createElement("p"), {
          className: "artifact-banner",
          textContent: "This chart could not be drawn; its numbers are in the Data table below.",
        }));
      }
    });
  }

  // --- sortable tables ------------------------------------------------------------------

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function sortTable(button) {
    var th = button.closest("th");
    var table = button.closest("table");
    var column = parseInt(button.dataset.sortColumn, 10);
    var direction = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("thead th").forEach(function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", direction);
    var body = table.tBodies[0];
    var rows = Array.from(body.rows).filter(function (row) { return row.cells.length > column; });
    if (rows.length < 2) return;
    var cell = function (row) { return row.cells[column]; };
    var numeric = rows.every(function (row) {
      var c = cell(row);
      return c.dataset.sortValue !== undefined || c.textContent.trim() === "";
    });
    var sign = direction === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = cell(a), y = cell(b);
      var xEmpty = x.textContent.trim() === "", yEmpty = y.textContent.trim() === "";
      if (xEmpty || yEmpty) return xEmpty === yEmpty ? 0 : (xEmpty ? 1 : -1); // blanks last either way
      if (numeric) return sign * (parseFloat(x.dataset.sortValue) - parseFloat(y.dataset.sortValue));
      return sign * collator.compare(x.textContent.trim(), y.textContent.trim());
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("table[data-sortable] .sort-button");
    if (button) sortTable(button);
  });

  // --- (re)initialise new content: first load, htmx swaps, WebSocket pushes ----------------

  function init(root) {
    var scope = root && root.querySelectorAll ? root : document;
    initCharts(scope);
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
})();
