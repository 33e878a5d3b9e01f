/* The centre panel: document autosave, merges and conflicts, Chart.js
 * charts, sortable tables. No build step; loaded on every workspace page.
 *
 * The one rule behind the document code: text the person typed is never
 * replaced by anything the server sends until it is saved (merged with what
 * changed meanwhile, docs/adr/0013) or they choose what to keep.
 *
 * A key press costs the same in a short document as in a long one: it only
 * marks the editor as changed and restarts two timers. Whatever reads or
 * compares the whole text runs once per save, answer or pushed change
 * (docs/adr/0042).
 */
(function () {
  "use strict";

  var AUTOSAVE_DELAY_MS = 1500;
  // A save that could not reach the server is tried again after 2, 4, 8 …
  // seconds (at most this long), and at once when the browser is back online
  // or the page's socket reconnects.
  var RETRY_MAX_MS = 30000;
  var MODE_KEY = "haico.docMode";
  var HAICO = (window.HAICO = window.HAICO || {});

  // --- per-editor state, kept on the form element itself ----------------------
  //
  // acked: what the editor's text is based on, as the server acknowledged
  //   it: a version with its title and text (from the page, a save's answer
  //   or a pushed change). It only moves forward. `fromText`: the text is not
  //   that version's own but the one this tab's last save carried, which the
  //   server merged into that version while the person typed on; saves then
  //   send it along, so the server merges against it (docs/adr/0040).
  // dirty: the editor may hold text the server does not have (set by every
  //   key; cleared once it has exactly the editor's text).
  // inFlight / sent: a save on its way, with its title, text and the acked
  //   it was based on; queued: another save waits behind it (hx-sync).
  // conflict: the conflict view is open; resolve: the choice the next save
  //   carries. failures / retry: saves that did not reach the server, and
  //   the timer that tries again.

  function editorState(form) {
    if (!form.__haico) {
      var field = baseField(form);
      form.__haico = {
        acked: {
          version: field ? parseInt(field.value, 10) : NaN,
          // The text the page was built with, whatever was typed before this ran.
          title: form.elements.title.defaultValue,
          content: form.elements.content.defaultValue,
          fromText: false,
        },
        dirty: false, timer: null, inFlight: false, sent: null, queued: false,
        conflict: false, resolve: null, returnToEditor: false, waiters: [],
        failures: 0, retry: null, status: "",
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

  function setStatus(form, text, state) {
    var holder = form.querySelector("#doc-save-state");
    if (!holder) return;
    var status = holder.querySelector("[data-doc-status]");
    // Only a change touches the page (a key press would otherwise rewrite a live region).
    if (status && status.textContent !== text) status.textContent = text;
    if (state && holder.dataset.state !== state) holder.dataset.state = state;
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

  // The editor holds exactly what it is based on: nothing to save.
  function unchanged(form) {
    var acked = editorState(form).acked;
    var now = values(form);
    return !acked.fromText && now.content === acked.content && now.title === acked.title;
  }

  // --- autosave ----------------------------------------------------------------

  function scheduleSave(form) {
    var state = editorState(form);
    state.dirty = true;
    if (!state.conflict && !state.failures) setStatus(form, "Unsaved changes");
    clearTimeout(state.timer);
    state.timer = setTimeout(function () { saveNow(form); }, AUTOSAVE_DELAY_MS);
  }

  function tooLong(form) {
    var limit = parseInt(form.dataset.maxChars || "0", 10);
    var value = form.elements.content.value;
    // UTF-16 units are never fewer than code points: count only near the limit.
    if (!limit || value.length <= limit) return null;
    // Count characters the way the server does (code points, not UTF-16 units).
    var length = Array.from(value).length;
    if (length <= limit) return null;
    return "The document is too long (" + length.toLocaleString() + " characters; the limit is " +
      limit.toLocaleString() + "). Nothing was saved; shorten it to save again.";
  }

  function saveNow(form) {
    var state = editorState(form);
    clearTimeout(state.timer);
    state.timer = null;
    clearTimeout(state.retry);
    state.retry = null;
    if (!form.isConnected) return false;
    var problem = tooLong(form);
    if (problem) {
      showLocalError(form, problem);
      failWaiters(form);
      return false;
    }
    if (!state.inFlight && !state.conflict && !state.resolve && unchanged(form)) {
      // Typed and typed back, say: the server has this text already.
      clearLocalError(form);
      state.failures = 0;
      setStatus(form, "Saved", "saved");
      savedAll(form);
      applyHeldPatch(form);
      return true;
    }
    clearLocalError(form);
    if (state.inFlight) state.queued = true; // hx-sync sends it once the one on its way is answered
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

  // The server has exactly what the editor shows: done, and whoever waited goes on.
  function savedAll(form) {
    var state = editorState(form);
    state.dirty = false;
    var waiters = state.waiters.splice(0);
    waiters.forEach(function (w) { w.then(); });
  }

  // A save that did not reach the server (offline, the server down or
  // restarting): the text stays, and it is tried again by itself.
  function saveFailed(form, reason) {
    var state = editorState(form);
    state.failures += 1;
    var delay = Math.min(RETRY_MAX_MS, 2000 * Math.pow(2, state.failures - 1));
    showLocalError(form, "Not saved: " + reason + ". Your text is still here; it is saved as soon as the " +
      "connection is back (trying again every few seconds).");
    clearTimeout(state.retry);
    state.retry = setTimeout(function () { retrySave(form); }, delay);
  }

  function retrySave(form) {
    var state = editorState(form);
    state.retry = null;
    if (!form.isConnected || !state.failures || state.inFlight || state.conflict) return;
    setStatus(form, "Saving…");
    saveNow(form);
  }

  // Back online, or the page's socket is back: a failed save goes at once.
  function retryNow() {
    var form = currentForm();
    if (form && editorState(form).failures) retrySave(form);
  }

  window.addEventListener("online", retryNow);
  document.addEventListener("htmx:wsOpen", retryNow);

  // The answer to the save that was on its way. `outcome` is the state the
  // server's save-state fragment says ("saved", "merged", "conflict",
  // "error"), or "failed" when no answer came.
  function settle(form, outcome, holder) {
    var state = editorState(form);
    var sent = state.sent;
    state.inFlight = false;
    state.sent = null;
    if (outcome === "failed") {
      state.returnToEditor = false;
      failWaiters(form);
      applyHeldPatch(form);
      return;
    }
    state.failures = 0;
    clearTimeout(state.retry);
    state.retry = null;
    var version = holder ? parseInt(holder.dataset.version, 10) : NaN;
    if ((outcome === "saved" || outcome === "merged") && sent && version > sent.base.version && version > state.acked.version) {
      state.conflict = false;
      if (outcome === "merged") {
        adoptMerged(form, holder.querySelector("template[data-doc-merged]"), sent, version);
      } else {
        state.acked = { version: version, title: sent.title, content: sent.content, fromText: false };
      }
      if (unchanged(form)) {
        savedAll(form);
      } else {
        // Typed on while it was on its way: saved again, based on where the server is now.
        state.dirty = true;
        setStatus(form, "Unsaved changes");
        if (!state.timer && !state.queued) saveNow(form);
      }
      if (state.returnToEditor && !state.inFlight) {
        state.returnToEditor = false;
        form.elements.content.focus();
      }
    } else if (outcome === "saved" || outcome === "merged") {
      // An answer that would take the editor back to an older version: the
      // version it holds is newer, so its text stays and is saved again.
      state.dirty = true;
      if (!state.timer && !state.queued) saveNow(form);
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
    var parameters = event.detail.parameters;
    state.inFlight = true;
    state.queued = false;
    state.sent = { base: state.acked, title: form.elements.title.value, content: form.elements.content.value };
    // The base is this tab's own record, never a field a response could have replaced.
    parameters.base_version = String(state.acked.version);
    if (state.acked.fromText) parameters.base_content = state.acked.content;
    if (state.resolve) {
      parameters.resolve = state.resolve;
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
      settle(form, "failed");
      if (xhr && xhr.status >= 400 && xhr.status < 500) {
        showLocalError(form, "Not saved: " + reason + ". Your text is still here; it will be saved with your next change.");
      } else {
        saveFailed(form, reason);
      }
      return;
    }
    var holder = document.getElementById("doc-save-state");
    var outcome = holder ? holder.dataset.state : "";
    settle(form, ["saved", "merged", "conflict", "error"].indexOf(outcome) >= 0 ? outcome : "error", holder);
  });

  document.addEventListener("htmx:sendError", function (event) {
    var form = event.detail.elt;
    if (form && form.id === "doc-form" && editorState(form).inFlight) {
      settle(form, "failed");
      saveFailed(form, "the connection failed");
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
    saveNow(form);
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
    data.set("base_version", String(state.acked.version));
    if (state.acked.fromText) data.set("base_content", state.acked.content);
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

  // --- typing on while a save was on its way: three-way, against what it carried ----------
  //
  // A save answered "merged" brings the merged text: what the save carried
  // (`sent`) plus what others changed since. Keys typed while it was on its
  // way are in the editor (`now`) but not in it. What they changed is put
  // on the merged text where it lands there, unless it touches a place the
  // others changed too; then the server merges it (docs/adr/0040).

  var MAX_LINE_EDITS = 1000; // beyond this the line diff gives up (the server merges)

  function commonPrefix(a, b) {
    var n = Math.min(a.length, b.length), i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
    return i;
  }

  function commonSuffix(a, b, limit) {
    var i = 0;
    while (i < limit && a.charCodeAt(a.length - 1 - i) === b.charCodeAt(b.length - 1 - i)) i++;
    return i;
  }

  // One change of `a` into `b`: a[start, end) became `text`.
  function span(a, b) {
    var head = commonPrefix(a, b);
    var tail = commonSuffix(a, b, Math.min(a.length, b.length) - head);
    return { start: head, end: a.length - tail, text: b.slice(head, b.length - tail) };
  }

  // Pairs of equal lines of `a` and `b` (arrays), as runs [i, j, length], by
  // Myers' difference algorithm; null when they differ in more than `limit` lines.
  function equalRuns(a, b, limit) {
    var n = a.length, m = b.length, offset = limit + 1;
    var v = new Int32Array(2 * limit + 3), trace = [];
    for (var d = 0; d <= limit; d++) {
      // The diagonals this round reads, as they were before it (for the way back).
      trace.push(v.slice(offset - d - 1, offset + d + 2));
      for (var k = -d; k <= d; k += 2) {
        var x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
        var y = x - k;
        while (x < n && y < m && a[x] === b[y]) { x++; y++; }
        v[offset + k] = x;
        if (x >= n && y >= m) return backtrack(trace, d, n, m);
      }
    }
    return null;
  }

  function backtrack(trace, d, x, y) {
    var runs = [];
    for (; d >= 0; d--) {
      var v = trace[d], k = x - y;
      var at = function (diagonal) { return v[diagonal + d + 1]; }; // trace[d] starts at diagonal -d-1
      var down = k === -d || (k !== d && at(k - 1) < at(k + 1));
      var prevX = d === 0 ? 0 : at(down ? k + 1 : k - 1);
      var startX = d === 0 ? 0 : (down ? prevX : prevX + 1);
      if (x > startX) runs.push([startX, startX - k, x - startX]);
      x = prevX;
      y = d === 0 ? 0 : prevX - (down ? k + 1 : k - 1);
    }
    return runs.reverse();
  }

  function lines(text) {
    return text.match(/[^\n]*\n|[^\n]+$/g) || [];
  }

  // What changed from `a` to `b`, as spans of `a` ({start, end, text}) in
  // order: by line, then each changed stretch narrowed to the characters
  // that differ. Null when the difference is too large to work out here.
  function changes(a, b) {
    if (a === b) return [];
    var head = commonPrefix(a, b);
    var tail = commonSuffix(a, b, Math.min(a.length, b.length) - head);
    // Whole lines around the difference.
    var from = head ? a.lastIndexOf("\n", head - 1) + 1 : 0;
    var toA = a.indexOf("\n", a.length - tail);
    toA = toA < 0 ? a.length : toA + 1;
    var toB = b.length - (a.length - toA);
    var la = lines(a.slice(from, toA)), lb = lines(b.slice(from, toB));
    var runs = equalRuns(la, lb, MAX_LINE_EDITS);
    if (!runs) return null;
    var out = [], i = 0, j = 0, atA = from, atB = from;
    runs.concat([[la.length, lb.length, 0]]).forEach(function (run) {
      var lenA = 0, lenB = 0, t;
      for (t = i; t < run[0]; t++) lenA += la[t].length;
      for (t = j; t < run[1]; t++) lenB += lb[t].length;
      if (lenA || lenB) {
        var inner = span(a.slice(atA, atA + lenA), b.slice(atB, atB + lenB));
        out.push({ start: atA + inner.start, end: atA + inner.end, text: inner.text });
      }
      atA += lenA; atB += lenB;
      for (t = 0; t < run[2]; t++) { atA += la[run[0] + t].length; atB += lb[run[1] + t].length; }
      i = run[0] + run[2]; j = run[1] + run[2];
    });
    return out;
  }

  // Where position `p` of `a` is in `b`, given the changes of `a` into `b`:
  // moved by the changes before it; inside one, just after its new text
  // (text put in right at `p` comes after it).
  function through(edits, p) {
    var shift = 0;
    for (var n = 0; n < edits.length; n++) {
      var edit = edits[n];
      if (edit.start >= p) break;
      if (edit.end > p) return edit.start + shift + edit.text.length;
      shift += edit.text.length - (edit.end - edit.start);
    }
    return p + shift;
  }

  // `merged` with what was typed since `sent` left (`now`), and where a
  // position of `now` is in the result; null when the typing touches
  // something the others changed.
  function rebase(sent, now, merged) {
    var typed = span(sent, now);
    var others = changes(sent, merged);
    if (!others) return null;
    var shift = 0;
    for (var n = 0; n < others.length; n++) {
      var edit = others[n];
      var insertions = edit.start === edit.end && typed.start === typed.end;
      if (edit.end < typed.start || (edit.end === typed.start && !insertions)) {
        shift += edit.text.length - (edit.end - edit.start);
      } else if (edit.start > typed.end || (edit.start === typed.end && !insertions)) {
        break;
      } else {
        return null; // the same place: the server decides
      }
    }
    var at = typed.start + shift;
    var text = merged.slice(0, at) + typed.text + merged.slice(typed.end + shift);
    var typedEnd = typed.start + typed.text.length; // in `now`
    return {
      text: text,
      map: function (p) {
        if (p < typed.start) return through(others, p);
        if (p <= typedEnd) return at + (p - typed.start);
        return through(others, p - typedEnd + typed.end) + typed.text.length - (typed.end - typed.start);
      },
    };
  }

  HAICO.rebaseDocument = rebase; // for the tests

  // --- the document changed elsewhere (the agent, another tab) ----------------------
  //
  // live.js hands over the new title, text and preview. With nothing unsaved
  // in this editor they go straight in, the caret and the scroll position kept
  // where they were relative to the text around them; while a save is on its
  // way the patch waits for it; over unsaved text the text is saved at once,
  // merged on the server with the new version, and the merged text comes
  // back in the save's answer.

  var heldPatch = null;

  // Put a saved version's text in the editor, keeping the caret (moved by
  // `map`, from the old text's positions to the new text's) and the scroll position.
  function putText(form, title, content, map) {
    var editor = form.elements.content;
    var before = editor.value;
    if (content !== before) {
      var focused = document.activeElement === editor;
      var start = editor.selectionStart, end = editor.selectionEnd, scroll = editor.scrollTop;
      if (!map) {
        var edits = changes(before, content);
        map = edits ? function (p) { return through(edits, p); } : function (p) { return Math.min(p, content.length); };
      }
      editor.value = content;
      if (focused) editor.setSelectionRange(map(start), map(end));
      editor.scrollTop = scroll;
    }
    if (form.elements.title.value !== title) form.elements.title.value = title;
  }

  function acknowledge(form, version, title, content, fromText) {
    editorState(form).acked = { version: version, title: title, content: content, fromText: !!fromText };
    var field = baseField(form);
    if (field) field.value = version; // for a save sent without this script (sendBeacon reads it too)
    var panel = form.closest("#panel-centre");
    if (panel) panel.setAttribute("data-document-version", version);
  }

  function templateText(template) {
    var fields = template.content;
    return {
      title: fields.querySelector("input[name=title]").getAttribute("value") || "",
      content: fields.querySelector("textarea").value,
    };
  }

  // A save came back merged as `version`: put the merged text in, with
  // whatever was typed since the save left on top of it.
  function adoptMerged(form, template, sent, version) {
    if (!template) return;
    var merged = templateText(template);
    var now = values(form);
    // A title typed meanwhile wins; otherwise the merged one comes in.
    var title = now.title === sent.title ? merged.title : now.title;
    if (now.content === sent.content) {
      putText(form, title, merged.content);
      acknowledge(form, version, merged.title, merged.content);
      return;
    }
    var rebased = rebase(sent.content, now.content, merged.content);
    if (rebased) {
      putText(form, title, rebased.text, rebased.map);
      acknowledge(form, version, merged.title, merged.content);
    } else {
      // The typing touches what someone else changed: the editor keeps it,
      // and the next save asks the server to merge it against `sent`.
      putText(form, title, now.content);
      acknowledge(form, version, merged.title, sent.content, true);
    }
  }

  function applyDocumentPatch(form, patch) {
    var text = templateText(patch);
    putText(form, text.title, text.content);
    acknowledge(form, parseInt(patch.getAttribute("data-version"), 10), text.title, text.content);
    var preview = document.getElementById("doc-preview");
    var incoming = patch.content.querySelector("[data-preview]");
    if (preview && incoming) showPreview(preview, incoming.innerHTML);
    editorState(form).previewed = null;
  }

  function offerPatch(form, patch) {
    var version = parseInt(patch.getAttribute("data-version"), 10);
    var state = editorState(form);
    if (!(version > state.acked.version)) return; // already here (this tab's own save)
    if (state.inFlight) {
      heldPatch = patch;
    } else if ((state.dirty && !unchanged(form)) || state.conflict) {
      heldPatch = null;
      saveNow(form); // merged with the new version on the server
    } else {
      heldPatch = null;
      state.dirty = false;
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
    var version = form ? editorState(form).acked.version : NaN;
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
