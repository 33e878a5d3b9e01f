/* The document editor: per-editor state, autosave, settling a save's answer,
 * the three-way rebase of typing done while a save was on its way, and
 * applying (or holding) document patches. No build step; loaded on the
 * owner's workspace page before document_history.js, document_review.js,
 * artifacts.js and preview.js, which use HAICO.documentEditor.
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
  var HAICO = (window.HAICO = window.HAICO || {});
  // A save left unanswered this long (a connection that died without an
  // error) counts as not reached: the saves queued behind it would
  // otherwise wait for it for ever. Sent again, it merges like any save.
  HAICO.saveTimeoutMs = 30000;

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
  //   the timer that tries again. refused: the last save reached it and was
  //   refused.
  // page / saveNumber / unansweredFrom: every save names this page (an id
  //   made as it loads) and its number; unansweredFrom is the number of the
  //   first save not answered since the last one written was, null when
  //   none. A save whose answer was lost may have been written: the next one
  //   names it, and the server merges against what it carried, never
  //   counting it as someone else's change (docs/adr/0139).
  // tookOver: the page this tab left with saves unanswered (a reload, Back),
  //   {page, number, unansweredFrom}, until one of this page's saves is
  //   answered written. This page keeps its own id and names that page apart:
  //   the server merges against that page's save if it was written, and bars
  //   its late saves; two tabs going on from one left page (a duplicated tab
  //   copies the tab's storage) never refuse or undo each other.

  function editorState(form) {
    if (!form.__haico) {
      var field = baseField(form);
      var version = field ? parseInt(field.value, 10) : NaN;
      form.__haico = {
        // The version the editor was built with (no save or patch has
        // changed the field yet when this first runs).
        builtWith: version,
        acked: {
          version: version,
          // The text the page was built with, whatever was typed before this ran.
          title: form.elements.title.defaultValue,
          content: form.elements.content.defaultValue,
          fromText: false,
        },
        dirty: false, timer: null, inFlight: false, sent: null, queued: false,
        conflict: false, resolve: null, returnToEditor: false, waiters: [],
        failures: 0, refused: false, retry: null, status: "",
        page: pageId(), saveNumber: 0, unansweredFrom: null, tookOver: null,
      };
    }
    return form.__haico;
  }

  // 128 random bits, hex: crypto.getRandomValues also works on a plain-HTTP host.
  function pageId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b < 16 ? "0" : "") + b.toString(16); }).join("");
  }

  // This save's page, number and the first still unanswered, for the form.
  function numberSave(state) {
    state.saveNumber += 1;
    if (state.unansweredFrom === null) state.unansweredFrom = state.saveNumber;
    var numbered = { save_page: state.page, save_number: String(state.saveNumber),
      save_unanswered_from: String(state.unansweredFrom) };
    if (state.tookOver) {
      numbered.save_left_page = state.tookOver.page;
      numbered.save_left_number = String(state.tookOver.number);
      numbered.save_left_unanswered_from = String(state.tookOver.unansweredFrom);
    }
    return numbered;
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

  // The editor holds exactly what it is based on: nothing to save. Not
  // while a save is unanswered: it may have been written, and text typed
  // back to the base must then be saved over it.
  function unchanged(form) {
    var state = editorState(form), acked = state.acked;
    var now = values(form);
    return state.unansweredFrom === null && state.tookOver === null && !acked.fromText &&
      now.content === acked.content && now.title === acked.title;
  }

  // --- autosave ----------------------------------------------------------------

  function scheduleSave(form) {
    var state = editorState(form);
    state.dirty = true;
    if (!state.conflict && !state.failures && !threadLost) setStatus(form, "Unsaved changes");
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
    if (state.composing) {
      // Half-composed letters are not the person's text yet: saved once it ends.
      state.saveAfterComposition = true;
      return true;
    }
    var problem = tooLong(form);
    if (problem) {
      showLocalError(form, problem);
      failWaiters(form);
      return false;
    }
    if (threadLost) {
      // Nothing can be saved to a thread that is gone: the text stays, said so.
      if (hasUnsavedWork(form)) showLocalError(form, THREAD_LOST_TEXT);
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
  function notReached(reason) {
    return "Not saved: " + reason + ". Your text is still here; it is saved as soon as the " +
      "connection is back (trying again every few seconds).";
  }

  // Says `message` and sends the text again a little later, then less often.
  function saveFailed(form, message) {
    var state = editorState(form);
    state.failures += 1;
    var delay = Math.min(RETRY_MAX_MS, 2000 * Math.pow(2, state.failures - 1));
    showLocalError(form, message);
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
  // Back from another tab, where the person may have just logged in again.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") retryNow();
  });

  // The answer to the save that was on its way. `outcome` is the state the
  // server's save-state fragment says ("saved", "merged", "conflict",
  // "error"), or "failed" when no answer came.
  function settle(form, outcome, holder) {
    var state = editorState(form);
    if (state.composing) {
      // Text put in while an input method composes would end the
      // composition and leave its letters in the text beside what it
      // commits: the answer waits for the composition to end.
      state.heldSettle = function () { settle(form, outcome, holder); };
      return;
    }
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
    // Written: every save sent before it is in what it was merged against, or never will be.
    if (outcome === "saved" || outcome === "merged") {
      state.unansweredFrom = null;
      state.tookOver = null;
    }
    // The server answered and would not take the text (see mayBeRefused).
    state.refused = outcome === "error";
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
    followKeptForADiscard(form);
  }

  document.addEventListener("input", function (event) {
    var form = event.target.closest && event.target.closest("#doc-form");
    if (!form || event.target.readOnly) return;
    dropNulCharacters(event.target);
    scheduleSave(form);
  });

  // A NUL pasted from a PDF or a terminal cannot be stored (the server
  // refuses the text) and cannot be seen: it goes as it comes in.
  function dropNulCharacters(field) {
    if (field.value.indexOf("\u0000") === -1) return;
    var start = field.selectionStart, end = field.selectionEnd;
    var before = function (p) { return p - (field.value.slice(0, p).match(/\u0000/g) || []).length; };
    var caret = [before(start), before(end)];
    field.value = field.value.replace(/\u0000/g, "");
    field.setSelectionRange(caret[0], caret[1]);
  }

  // An input method composing (Chinese, Japanese, Korean …): nothing changes
  // the editor's text until it ends; what waited meanwhile goes then.
  document.addEventListener("compositionstart", function (event) {
    var form = event.target.closest && event.target.closest("#doc-form");
    if (form) editorState(form).composing = true;
  });
  // Leaving the field ends a composition too, should the browser not say so.
  ["compositionend", "focusout"].forEach(function (name) {
    document.addEventListener(name, compositionEnded);
  });

  function compositionEnded(event) {
    var form = event.target.closest && event.target.closest("#doc-form");
    if (!form || !editorState(form).composing) return;
    var state = editorState(form);
    state.composing = false;
    var held = state.heldSettle;
    state.heldSettle = null;
    if (held) held(); else applyHeldPatch(form);
    if (state.saveAfterComposition) {
      state.saveAfterComposition = false;
      scheduleSave(form);
    }
  }

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
    event.detail.timeout = HAICO.saveTimeoutMs;
    state.sent = { base: state.acked, title: form.elements.title.value, content: form.elements.content.value };
    // The base is this tab's own record, never a field a response could have replaced.
    parameters.base_version = String(state.acked.version);
    if (state.acked.fromText) parameters.base_content = state.acked.content;
    var numbered = numberSave(state);
    Object.keys(numbered).forEach(function (name) { parameters[name] = numbered[name]; });
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
    var loggedOut = xhr && (xhr.status === 401 || (HAICO.sentToLogIn && HAICO.sentToLogIn(xhr)));
    if (!xhr || xhr.status === 0 || xhr.status >= 300 || loggedOut) {
      var reason = xhr && xhr.status ? "the server answered " + xhr.status : "the connection failed";
      settle(form, "failed");
      if (loggedOut && HAICO.accountDeactivated && HAICO.accountDeactivated(xhr)) {
        // They cannot log in again. Still tried again now and then: should
        // staff reactivate the account, the text is saved (docs/adr/0108).
        saveFailed(form, "Not saved: your account has been deactivated, so nothing more can be saved here. " +
          "Your text is still in the editor: copy anything you need, and ask whoever runs this HAICO to reactivate the account.");
      } else if (loggedOut) {
        // Tried again by itself: it goes through once the person has logged
        // in again in another tab (docs/adr/0108).
        saveFailed(form, "Not saved: you are not logged in here any more. Your text is still here; it is saved " +
          "by itself once you have logged in again in another tab.");
      } else if (xhr && xhr.status >= 400 && xhr.status < 500) {
        editorState(form).refused = true;
        showLocalError(form, "Not saved: " + reason + ". Your text is still here; it will be saved with your next change.");
      } else {
        saveFailed(form, notReached(reason));
      }
      return;
    }
    var holder = document.getElementById("doc-save-state");
    var outcome = holder ? holder.dataset.state : "";
    if (holder && holder.hasAttribute("data-gone")) {
      // The thread was deleted or is no longer shared with this person.
      settle(form, "error", holder);
      loseThread();
      return;
    }
    settle(form, ["saved", "merged", "conflict", "error"].indexOf(outcome) >= 0 ? outcome : "error", holder);
  });

  document.addEventListener("htmx:sendError", function (event) {
    var form = event.detail.elt;
    if (form && form.id === "doc-form" && editorState(form).inFlight) {
      settle(form, "failed");
      saveFailed(form, notReached("the connection failed"));
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

  // Leaving the page with text the server does not have: the beacon goes
  // now, and the browser asks first. Closing a tab, Chromium ends the page
  // when its pagehide handlers have not finished within a short time, and
  // a busy machine can spend that before they start; it waits for
  // beforeunload (docs/adr/0167). If the person stays, the beacon is a save
  // whose answer was lost: the next save names it and is merged against
  // what it carried (docs/adr/0139).
  window.addEventListener("beforeunload", function (event) {
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    beaconLastWords(form);
    event.preventDefault();
    event.returnValue = "";
  });

  // A closed tab must not lose the last second of typing (merged like any
  // save). A beacon carries at most 64 KB: it carries only the span typed
  // since the last save (`asChangedPart`), and when even that does not fit
  // (a long paste, or typing on while a save came back merged), what the
  // server does not have is left in the tab's sessionStorage, and saved
  // when this tab shows the document again (Back, Forward, a reload:
  // `takeBackWhatWasLeft`).
  window.addEventListener("pagehide", function () {
    pageLeft = true;
    var form = currentForm();
    if (!form) return;
    var state = editorState(form);
    if (threadLost || madeViewer()) {
      // No beacon (refused, and the browser would count it taken): kept
      // for the thread list, since no page of this person's can save it.
      keepLostWords(form);
      return;
    }
    if (beaconLastWords(form)) {
      // The browser took the beacon. Kept as well, it would be saved again
      // on coming back, and bring back words someone deleted since.
      leaveNothing(form);
    } else {
      leaveUnsaved(form, state);
    }
  });

  // Sends what the server does not have as a beacon, unless the last one
  // (at beforeunload) carried exactly this and no save went after it.
  // True when the browser took one. A save on its way may still be written
  // after the page is gone: the beacon goes too, numbered after it, so
  // either it is merged against what that save carried or that save,
  // arriving later, is refused, and what she deleted meanwhile stays
  // deleted (docs/adr/0139).
  function beaconLastWords(form) {
    var state = editorState(form);
    if (threadLost || madeViewer()) return false;
    var now = values(form), last = state.beaconed;
    if (last && last.number === state.saveNumber && last.title === now.title && last.content === now.content) return true;
    var beaconable = navigator.sendBeacon && (state.dirty || state.inFlight) && !state.conflict && !tooLong(form);
    if (!beaconable || mayBeRefused(form, state) || !sendBeacon(form, state)) return false;
    state.beaconed = { number: state.saveNumber, title: now.title, content: now.content };
    return true;
  }

  // A hidden tab may be frozen and then discarded by the browser with no
  // pagehide (a background tab under memory pressure: the Page Lifecycle's
  // last words are visibilitychange to hidden and freeze), and reloaded when
  // the person comes back to it. What is not saved is kept in the tab then
  // too, as pagehide keeps it, so that reload brings it back
  // (`takeBackWhatWasLeft`). While hidden it follows each save's answer, and
  // it goes once everything is saved or the page shows again, so nothing
  // saved meanwhile comes back stale (docs/adr/0157).
  var pageLeft = false, keptForADiscard = false;

  function keepForADiscard() {
    var form = currentForm();
    if (!form || pageLeft || threadLost || madeViewer()) return;
    var state = editorState(form);
    if (!state.dirty && !state.inFlight && !state.conflict) {
      dropKeptForADiscard(form);
      return;
    }
    leaveUnsaved(form, state);
    keptForADiscard = true;
  }

  function dropKeptForADiscard(form) {
    if (!keptForADiscard || pageLeft || !form) return;
    keptForADiscard = false;
    leaveNothing(form);
  }

  // After a save's answer: kept up to date while the tab is hidden.
  function followKeptForADiscard(form) {
    if (!keptForADiscard) return;
    if (document.visibilityState === "hidden") keepForADiscard();
    else dropKeptForADiscard(form);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") keepForADiscard();
    else dropKeptForADiscard(currentForm());
  });
  document.addEventListener("freeze", keepForADiscard);

  // The browser counts a beacon taken whatever the server answers, so one
  // goes only when nothing says the server may refuse it: saves failing or
  // refused (the server away, a text it would not take), the session known
  // to have ended, or a document so near its limit that keeping both sides
  // of an overlap could pass it. Otherwise what was typed is kept in the
  // tab for coming back (docs/adr/0040).
  function mayBeRefused(form, state) {
    if (state.failures || state.refused) return true;
    if (HAICO.sessionKnownEnded && HAICO.sessionKnownEnded()) return true;
    var limit = parseInt(form.dataset.maxChars || "0", 10);
    return !!limit && form.elements.content.value.length > limit * NEAR_THE_LIMIT;
  }

  var NEAR_THE_LIMIT = 0.9;

  // The owner made this person a viewer while the page was open: its saves
  // are refused until it is reloaded, and a reloaded page has no editor.
  function madeViewer() {
    var notice = document.getElementById("chat-notice");
    return !!notice && notice.getAttribute("data-access") === "viewer";
  }

  // Log out: what is typed is saved first. The session ends with the
  // logout's answer, before the page goes, so a beacon sent as it goes
  // would be refused; a save that fails leaves the browser's leave prompt.
  document.addEventListener("submit", function (event) {
    var logout = event.target;
    if (!logout.hasAttribute || !logout.hasAttribute("data-log-out") || logout.__haicoSaved) return;
    var form = currentForm();
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    var go = function () {
      logout.__haicoSaved = true;
      logout.requestSubmit();
    };
    whenSaved(form, go, go);
  });

  function sendBeacon(form, state) {
    var data = new FormData(form);
    data.set("base_version", String(state.acked.version));
    if (state.acked.fromText) data.set("base_content", state.acked.content);
    else asChangedPart(data, state.acked.content, form.elements.content.value);
    var numbered = numberSave(state);
    Object.keys(numbered).forEach(function (name) { data.set(name, numbered[name]); });
    // Nobody is left to choose in a conflict view: where the words typed
    // last overlap a change saved meanwhile, both are kept (docs/adr/0040).
    data.set("resolve", "both");
    // No token: the server refuses, nothing is overwritten. A beacon sends
    // no headers, so whom the page is for goes in the form (docs/adr/0108).
    var token = HAICO.csrfToken ? HAICO.csrfToken() : "";
    if (token) data.set("csrfmiddlewaretoken", token);
    if (HAICO.pagePerson && HAICO.pagePerson()) data.set("haico_person", HAICO.pagePerson());
    return navigator.sendBeacon(form.getAttribute("action"), data);
  }

  // The content as the one span changed in the version it was typed on
  // (workspace/text_splice.py): a beacon takes at most 64 KB, so a long
  // document does not fit whole, while what was typed since its last save
  // does. The server counts code points, so the span never cuts a pair of
  // UTF-16 units, and its ends are sent as code points; the CRC-32 of the
  // whole text lets the server be sure it rebuilt what the editor holds.
  function asChangedPart(data, base, now) {
    var change = span(base, now);
    var head = change.start, tail = base.length - change.end;
    if (head > 0 && isHighSurrogate(base.charCodeAt(head - 1))) head--;
    if (tail > 0 && isLowSurrogate(base.charCodeAt(base.length - tail))) tail--;
    data.delete("content");
    data.set("content_kept_head", String(codePoints(base, 0, head)));
    data.set("content_kept_tail", String(codePoints(base, base.length - tail, base.length)));
    data.set("content_middle", now.slice(head, now.length - tail));
    data.set("content_crc32", String(crc32(now)));
  }

  function isHighSurrogate(unit) { return unit >= 0xd800 && unit <= 0xdbff; }
  function isLowSurrogate(unit) { return unit >= 0xdc00 && unit <= 0xdfff; }

  function codePoints(text, from, to) {
    var count = to - from;
    for (var i = from + 1; i < to; i++) {
      if (isLowSurrogate(text.charCodeAt(i)) && isHighSurrogate(text.charCodeAt(i - 1))) count--;
    }
    return count;
  }

  var CRC32_TABLE = null;

  function crc32(text) {
    if (!CRC32_TABLE) {
      CRC32_TABLE = new Int32Array(256);
      for (var n = 0; n < 256; n++) {
        var c = n;
        for (var k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        CRC32_TABLE[n] = c;
      }
    }
    var bytes = new TextEncoder().encode(text), crc = -1;
    for (var i = 0; i < bytes.length; i++) crc = CRC32_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
    return (crc ^ -1) >>> 0;
  }

  // --- a thread that is gone ---------------------------------------------------
  //
  // The thread was deleted, or this person's share of it removed, while the
  // page was open: its socket closes with 4404 (conversations.consumers) and
  // a save is answered "no longer exists" (data-gone). What the editor holds
  // that the server does not have can never be saved: it stays in the
  // editor, the editor says so, and nothing is sent again. When the page
  // goes it is kept in the tab under the person's key, and the thread list
  // shows it once to copy (static/js/words_kept.js), instead of waiting for
  // a page that can no longer open (docs/adr/0040).

  var THREAD_LOST_TEXT = "Not saved: this thread was deleted or is no longer shared with you, so what you typed " +
    "here cannot be saved. It is still in the editor: copy it to keep it.";
  var THREAD_LOST_CODE = 4404;
  var threadLost = false;

  // One entry per page load: the same thread lost again later (a share
  // removed, given back, removed again) adds its own words and never
  // replaces or drops what an earlier page kept and the person has not
  // dismissed yet.
  var PAGE_LOAD = Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

  function lostKey(form) {
    var person = HAICO.pagePerson ? HAICO.pagePerson() || "" : "";
    return person ? "haico:words-lost:" + person + ":document:" + form.getAttribute("action") + ":" + PAGE_LOAD : "";
  }

  function keepLostWords(form) {
    var key = lostKey(form);
    if (!key) return;
    try {
      if (hasUnsavedWork(form) && !unchanged(form)) {
        var title = document.getElementById("thread-title");
        var now = values(form);
        window.sessionStorage.setItem(key, JSON.stringify({
          thread: title ? title.textContent.trim() : "", what: "document", title: now.title, text: now.content,
          // Made a viewer, the person still opens the thread: its page shows them (static/js/words_kept.js).
          why: !threadLost && madeViewer() ? "viewer" : "lost",
        }));
      } else {
        window.sessionStorage.removeItem(key);
      }
      // Kept here instead: a page that cannot open would never take it back.
      leaveNothing(form);
    } catch (e) { /* storage refused: the text is still in the editor */ }
  }

  function loseThread() {
    threadLost = true;
    var form = currentForm();
    if (!form) return;
    var state = editorState(form);
    clearTimeout(state.timer);
    state.timer = null;
    clearTimeout(state.retry);
    state.retry = null;
    state.failures = 0;
    if (hasUnsavedWork(form) && !unchanged(form)) showLocalError(form, THREAD_LOST_TEXT);
    failWaiters(form);
    keepLostWords(form);
  }

  document.addEventListener("htmx:wsClose", function (event) {
    var close = event.detail && event.detail.event;
    if (close && close.code === THREAD_LOST_CODE) loseThread();
  });

  // --- what a page left behind -------------------------------------------------
  //
  // A page the browser loads again from Back, Forward or a reload may find
  // the editor filled with the text the earlier page showed (the browser's
  // own form restoring): older than the server's, or holding typing the
  // server never got. Neither is taken as typed on the new page's version,
  // which would save the older text over whatever was saved since. The
  // editor shows the server's text; what the earlier page had not saved
  // (recorded at pagehide with the version it was typed on) is put back
  // and saved from that version, so the server merges it with what changed
  // since (docs/adr/0040).

  function leftKey(form) {
    var person = HAICO.pagePerson ? HAICO.pagePerson() || "" : "";
    return "haico:document-left:" + form.getAttribute("action") + ":" + person;
  }

  function leaveNothing(form) {
    try { window.sessionStorage.removeItem(leftKey(form)); } catch (e) { /* nothing kept */ }
  }

  function leaveUnsaved(form, state) {
    if (!state.dirty && !state.inFlight && !state.conflict) {
      leaveNothing(form);
      return;
    }
    var key = leftKey(form);
    try {
      var now = values(form);
      // None of this page's saves sent yet: the page it took over is still the one to name.
      var unanswered = state.unansweredFrom !== null ?
        { page: state.page, number: state.saveNumber, unansweredFrom: state.unansweredFrom } : state.tookOver;
      window.sessionStorage.setItem(key, JSON.stringify({
        acked: state.acked, title: now.title, content: now.content, unanswered: unanswered,
      }));
    } catch (e) { /* private mode or full: the beacon and the leave prompt remain */ }
  }

  // Text the browser put back, which nobody typed on this page: the editor
  // shows what it is based on instead.
  function dropRestoredText(form) {
    if (!form) return;
    var state = editorState(form);
    if (state.dirty || state.inFlight || state.conflict) return;
    var fields = form.elements;
    if (fields.content.value !== state.acked.content) fields.content.value = state.acked.content;
    if (fields.title.value !== state.acked.title) fields.title.value = state.acked.title;
  }

  function takeBackWhatWasLeft(form) {
    if (!form) return;
    dropRestoredText(form);
    var fields = form.elements;
    var key = leftKey(form), left = null;
    try {
      left = JSON.parse(window.sessionStorage.getItem(key) || "null");
      window.sessionStorage.removeItem(key);
    } catch (e) { left = null; }
    var state = editorState(form);
    if (!left || !left.acked || typeof left.content !== "string" || typeof left.title !== "string") return;
    var unanswered = leftUnanswered(left.unanswered);
    // Text the same as the page shows is nothing to save, unless a save of
    // the left page is unanswered: written late, it would bring back what
    // she deleted, so this page saves her text over it (docs/adr/0139).
    if (!unanswered && left.content === fields.content.defaultValue && left.title === fields.title.defaultValue) return;
    if (!(left.acked.version <= state.acked.version)) return;
    // Typed on an older version: saved from it, merged with what came since.
    fields.content.value = left.content;
    fields.title.value = left.title;
    state.acked = {
      version: left.acked.version, title: left.acked.title, content: left.acked.content, fromText: !!left.acked.fromText,
    };
    // A save of the earlier page had no answer: this page's saves name it,
    // so the server merges against it if it was written (docs/adr/0139).
    state.tookOver = unanswered;
    state.dirty = true;
    setStatus(form, "Saving what you typed before you left the page…");
    saveNow(form);
  }

  // What the left page said of its unanswered saves, when it is sound.
  function leftUnanswered(left) {
    if (!left || typeof left.page !== "string" || !/^[A-Za-z0-9_-]{16,64}$/.test(left.page)) return null;
    var whole = function (n) { return typeof n === "number" && n % 1 === 0 && n >= 1 && n < 2147483648; };
    if (!whole(left.number) || !whole(left.unansweredFrom) || left.unansweredFrom > left.number) return null;
    return { page: left.page, number: left.number, unansweredFrom: left.unansweredFrom };
  }

  document.addEventListener("DOMContentLoaded", function () { takeBackWhatWasLeft(currentForm()); });
  window.addEventListener("pageshow", function (event) {
    var form = currentForm();
    if (!form) return;
    if (!event.persisted) {
      // Chromium may fill a form in from history after DOMContentLoaded too
      // (the Back tests fail without this).
      dropRestoredText(form);
      return;
    }
    // From the back-forward cache the page is as it was left: nothing to take back.
    pageLeft = false;
    keptForADiscard = false;
    leaveNothing(form);
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

  // --- characters as people see them (docs/adr/0128) ---
  //
  // A flag, an emoji with its skin tone or joined to others, a letter with a
  // combining accent: one character to the person, several UTF-16 units
  // here. Every change below is widened to whole characters (grapheme
  // clusters), so two changes of one character overlap and go to the
  // server, which reports them, instead of being spliced into a third.

  var GRAPHEME_WINDOW = 64; // characters a cluster reaches back or on, beyond any real one

  // Where the clusters of text[from, to) end (from a cluster's start): by
  // Intl.Segmenter where the browser has it, else by code points, keeping
  // combining marks, joiners, variation selectors, skin tones, tags and
  // regional-indicator pairs with what they belong to.
  var segmenter = null;
  var JOINS_PREVIOUS = /^(?:\p{M}|[\u200D\uFE00-\uFE0F\u{1F3FB}-\u{1F3FF}\u{E0020}-\u{E007F}\u{E0100}-\u{E01EF}])/u;
  var REGIONAL = /^[\u{1F1E6}-\u{1F1FF}]/u;

  function clusterEnds(text, from, to) {
    var ends = [];
    if (typeof Intl !== "undefined" && Intl.Segmenter) {
      segmenter = segmenter || new Intl.Segmenter(undefined, { granularity: "grapheme" });
      var parts = segmenter.segment(text.slice(from, to));
      for (var part of parts) ends.push(from + part.index + part.segment.length);
      return ends;
    }
    var at = from, regional = 0;
    while (at < to) {
      var point = String.fromCodePoint(text.codePointAt(at));
      var joins = ends.length && at > from && (JOINS_PREVIOUS.test(point) || text.charCodeAt(at - 1) === 0x200d ||
        (REGIONAL.test(point) && regional % 2 === 1));
      regional = REGIONAL.test(point) ? regional + 1 : 0;
      if (joins) ends[ends.length - 1] = at + point.length;
      else ends.push(at + point.length);
      at += point.length;
    }
    return ends;
  }

  // A place before `p` that is surely between two clusters: a line's start,
  // or between two plain ASCII characters (never one cluster but "\r\n").
  function safeBefore(text, p) {
    var stop = Math.max(0, p - GRAPHEME_WINDOW);
    for (var q = p - 1; q > stop; q--) {
      var prev = text.charCodeAt(q - 1), next = text.charCodeAt(q);
      if (prev === 10 || (prev < 128 && next < 128 && !(prev === 13 && next === 10))) return q;
    }
    var line = text.lastIndexOf("\n", p - 1) + 1;
    return Math.max(line, 0);
  }

  function safeAfter(text, p) {
    var stop = Math.min(text.length, p + GRAPHEME_WINDOW);
    for (var q = p + 1; q < stop; q++) {
      var prev = text.charCodeAt(q - 1), next = text.charCodeAt(q);
      if (prev === 10 || (prev < 128 && next < 128 && !(prev === 13 && next === 10))) return q;
    }
    var line = text.indexOf("\n", p);
    return line < 0 ? text.length : line + 1;
  }

  // The cluster of `text` position `p` is in: [start, end); p itself when
  // it is between two.
  function clusterAround(text, p) {
    if (p <= 0 || p >= text.length) return [p, p];
    var prev = text.charCodeAt(p - 1), next = text.charCodeAt(p);
    if (prev === 10 || (next === 10 && prev !== 13)) return [p, p];
    if (prev < 128 && next < 128 && !(prev === 13 && next === 10)) return [p, p];
    var from = safeBefore(text, p), ends = clusterEnds(text, from, safeAfter(text, p));
    var start = from;
    for (var n = 0; n < ends.length; n++) {
      if (ends[n] === p) return [p, p];
      if (ends[n] > p) return [start, ends[n]];
      start = ends[n];
    }
    return [p, p];
  }

  function isBoundary(text, p) {
    return clusterAround(text, p)[0] === p;
  }

  // One change of `a` into `b`: a[start, end) became `text`, widened to
  // whole characters of both.
  function span(a, b) {
    var head = commonPrefix(a, b);
    var tail = commonSuffix(a, b, Math.min(a.length, b.length) - head);
    for (;;) {
      var start = Math.min(clusterAround(a, head)[0], clusterAround(b, head)[0]);
      var endA = clusterAround(a, a.length - tail)[1], endB = clusterAround(b, b.length - tail)[1];
      var newTail = Math.min(a.length - Math.max(endA, a.length - tail), b.length - Math.max(endB, b.length - tail));
      if (start === head && newTail === tail) break;
      head = start;
      tail = newTail;
    }
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
  // moved by the changes before it; inside one, where it is among the words
  // that change kept (`within`), else just after its new text (text put in
  // right at `p` comes after it).
  function through(edits, p, a) {
    var shift = 0;
    for (var n = 0; n < edits.length; n++) {
      var edit = edits[n];
      if (edit.start >= p) break;
      if (edit.end > p) return edit.start + shift + within(a, edit, p);
      shift += edit.text.length - (edit.end - edit.start);
    }
    return p + shift;
  }

  // A change is one span per changed stretch of lines, so one line where
  // someone else changed a word before the caret and another after it is
  // one change around the caret. Taken whole, the caret went to its end: the
  // person typing in that line went on typing after the other's words,
  // away from their own (docs/adr/0162). Inside a change, the caret keeps
  // its place among the words the change kept (by word, Myers' algorithm);
  // in a word that changed, it goes after that word's new text, as before.
  var MAX_WORD_EDITS = 200, MAX_WITHIN_CHARS = 20000;
  var WORDS = /\s+|[\p{L}\p{N}\p{M}_]+|[^\s\p{L}\p{N}\p{M}_]+/gu;

  function within(a, edit, p) {
    var old = a === undefined ? "" : a.slice(edit.start, edit.end), text = edit.text;
    if (!old || old.length + text.length > MAX_WITHIN_CHARS) return text.length;
    var wa = old.match(WORDS) || [], wb = text.match(WORDS) || [];
    var runs = equalRuns(wa, wb, MAX_WORD_EDITS);
    if (!runs) return text.length;
    var q = p - edit.start, i = 0, j = 0, atA = 0, atB = 0;
    for (var r = 0; r < runs.length; r++) {
      var run = runs[r];
      for (; i < run[0]; i++) atA += wa[i].length;
      for (; j < run[1]; j++) atB += wb[j].length;
      if (q < atA) return atB; // in a changed word before this run: after its new text
      var kept = 0;
      for (var t = 0; t < run[2]; t++) kept += wa[run[0] + t].length;
      if (q <= atA + kept) return atB + (q - atA);
      for (; i < run[0] + run[2]; i++) atA += wa[i].length;
      for (; j < run[1] + run[2]; j++) atB += wb[j].length;
    }
    return text.length;
  }

  // `merged` with what was typed since `sent` left (`now`), and where a
  // position of `now` is in the result; null when the typing touches
  // something the others changed, a character of it included (both
  // changed one flag or one emoji: the server merges, and reports it).
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
      } else if (edit.start > typed.end || (edit.start === typed.end && (!insertions || edit.text.charAt(0) === "\n"))) {
        // After the typing; or new lines put in at the very place the
        // typing goes on (the agent's section appended while a paragraph is
        // typed at the end): the typing continues its line, so it comes
        // first, as the server's merge put what was sent first (docs/adr/0116).
        break;
      } else {
        return null; // the same place: the server decides
      }
    }
    var at = typed.start + shift;
    var text = merged.slice(0, at) + typed.text + merged.slice(typed.end + shift);
    // The typing meets the others' text between two characters, or not here.
    if (!isBoundary(text, at) || !isBoundary(text, at + typed.text.length)) return null;
    var typedEnd = typed.start + typed.text.length; // in `now`
    return {
      text: text,
      map: function (p) {
        if (p < typed.start) return through(others, p, sent);
        if (p <= typedEnd) return at + (p - typed.start);
        return through(others, p - typedEnd + typed.end, sent) + typed.text.length - (typed.end - typed.start);
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
      // The selection is kept unfocused too: the person may be writing the
      // message that asks about it, or come back to it from the title.
      var start = editor.selectionStart, end = editor.selectionEnd, direction = editor.selectionDirection;
      var scroll = editor.scrollTop;
      if (!map) {
        var edits = changes(before, content);
        map = edits ? function (p) { return through(edits, p, before); } : function (p) { return Math.min(p, content.length); };
      }
      editor.value = content;
      editor.setSelectionRange(map(start), map(end), direction);
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
    // A title typed meanwhile wins; otherwise the merged one comes in,
    // unless it is the one sent with only its outer spaces trimmed (the
    // server's way): the person is typing there, a space before the next
    // word, and the title they have is the one saved.
    var trimmedOnly = now.title === sent.title && merged.title === sent.title.trim();
    var title = now.title === sent.title && !trimmedOnly ? merged.title : now.title;
    var savedTitle = trimmedOnly ? sent.title : merged.title;
    if (now.content === sent.content) {
      putText(form, title, merged.content);
      acknowledge(form, version, savedTitle, merged.content);
      return;
    }
    var rebased = rebase(sent.content, now.content, merged.content);
    if (rebased) {
      putText(form, title, rebased.text, rebased.map);
      acknowledge(form, version, savedTitle, merged.content);
    } else {
      // The typing touches what someone else changed: the editor keeps it,
      // and the next save asks the server to merge it against `sent`.
      putText(form, title, now.content);
      acknowledge(form, version, savedTitle, sent.content, true);
    }
  }

  // A restore's answer carries only the span of the text that differs
  // from the version this page restored from (workspace/panels.py
  // render_document_patch, docs/adr/0138): rebuilt on that version's text,
  // which the editor holds acknowledged, and checked by the CRC-32 of the
  // whole. False when this page no longer holds that version.
  function wholeText(form, patch) {
    if (!patch.hasAttribute("data-since-version")) return true;
    var acked = editorState(form).acked;
    var since = parseInt(patch.getAttribute("data-since-version"), 10);
    if (acked.version !== since || acked.fromText) return false;
    var base = acked.content;
    var head = parseInt(patch.getAttribute("data-kept-head"), 10);
    var tail = parseInt(patch.getAttribute("data-kept-tail"), 10);
    if (!(head >= 0 && tail >= 0 && head + tail <= base.length)) return false;
    var field = patch.content.querySelector("textarea");
    var text = base.slice(0, head) + field.value + base.slice(base.length - tail);
    if (crc32(text) !== parseInt(patch.getAttribute("data-crc32"), 10)) return false;
    field.value = text;
    patch.removeAttribute("data-since-version");
    return true;
  }

  function applyDocumentPatch(form, patch) {
    // Not the version it was cut for: the workspace is read again whole.
    if (!wholeText(form, patch)) return HAICO.resync();
    var text = templateText(patch);
    putText(form, text.title, text.content);
    acknowledge(form, parseInt(patch.getAttribute("data-version"), 10), text.title, text.content);
    var preview = document.getElementById("doc-preview");
    var incoming = patch.content.querySelector("[data-preview]");
    if (preview && incoming) HAICO.preview.show(preview, incoming.innerHTML);
  }

  function offerPatch(form, patch) {
    var version = parseInt(patch.getAttribute("data-version"), 10);
    var state = editorState(form);
    if (!(version > state.acked.version)) return; // already here (this tab's own save)
    if (state.inFlight || state.composing) {
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
    var stand = heldResync;
    heldResync = null;
    if (stand) documentResync(stand);
  }

  // A document alone too big for the socket comes as a stand-in naming its
  // version (docs/adr/0043). The tab whose save wrote it has that version
  // from the save's answer, text and preview: it reads nothing again, as it
  // would drop the patch (offerPatch). Any other page reads the workspace:
  // one behind (another tab's or the agent's edit; its unsaved text is then
  // merged by offerPatch), with no editor (an artifact on show), or showing
  // the review of the agent's changes, which the text's changes reshape. A
  // save on its way may be the one that wrote it: decided once answered.
  var heldResync = null;

  function documentResync(template) {
    var version = parseInt(template.getAttribute("data-version"), 10);
    var form = currentForm();
    var review = document.getElementById("doc-review");
    if (!form || isNaN(version) || (review && !review.hidden)) return HAICO.resync();
    var state = editorState(form);
    if (state.inFlight || state.composing) {
      if (!heldResync || version > parseInt(heldResync.getAttribute("data-version"), 10)) heldResync = template;
    } else if (version > state.acked.version) {
      HAICO.resync();
    } else if (HAICO.documentHistory) {
      HAICO.documentHistory.notePatch(template); // as the patch would: a newer version than the history lists
    }
  }

  HAICO.documentResync = documentResync;

  // The one listener for a pushed or answered document patch (live.js
  // dispatches it). The editor takes the text first, so that by the time the
  // history says a newer version exists and the review is replaced, the
  // version they describe is the one the editor holds (or is saving against);
  // the history and the review only read the patch, never the editor.
  document.addEventListener("haico:document-patch", function (event) {
    var template = event.detail.template;
    var form = currentForm();
    // With an artifact on show there is no editor: the document is read
    // fresh when the person goes back to it.
    if (form) offerPatch(form, template.cloneNode(true));
    if (HAICO.documentHistory) HAICO.documentHistory.notePatch(template);
    if (HAICO.documentReview) HAICO.documentReview.notePatch(template);
  });

  // What the other document scripts (document_history.js, document_review.js,
  // artifacts.js, preview.js) use of the editor.
  HAICO.documentEditor = {
    currentForm: currentForm,
    editorState: editorState,
    hasUnsavedWork: hasUnsavedWork,
    whenSaved: whenSaved,
    tooLong: tooLong,
  };
})();
