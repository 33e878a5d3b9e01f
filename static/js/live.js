/* HAICO live patches.
 *
 * Patches: the server sends what changed as <template data-live-patch>
 * elements appended to #live-inbox, both as HTMX responses and as WebSocket
 * pushes (templates/workspace/panels/live.html). Each is applied here and
 * removed:
 * - "plan" / "preferences": rows to put in place (a row's data-after names
 *   the row before it, "" for the first), ids that are gone (data-remove),
 *   or, with data-complete, every row there is. An existing row keeps its
 *   element: only its read view and attributes change, so an open edit form
 *   in it, focus and the menu stay as they are; the "Add" fields are never
 *   touched. The plan's outline numbers are the server's: each row arrives
 *   numbered, and a change that may renumber rows it did not touch (a move,
 *   a delete) lists every row's number (data-numbers, docs/adr/0081); the
 *   labels of an open editor and the checklist follow them. The done count
 *   comes with every plan patch (data-done, data-steps).
 * - "plan-history": the plan's history has new entries (docs/adr/0092),
 *   named by their oldest and newest ids. A page with the history open asks
 *   for those it does not show and puts them at its top, each once; a page
 *   without it open does nothing (opening it reads it afresh).
 * - "document": handed to static/js/document_editor.js (haico:document-patch).
 * - "value": a selector's value (the Mode, the Model), set in place so a
 *   keyboard user on it keeps focus.
 * - "swap": elements put in place of the page's elements with the same ids
 *   (a turn's version arrows, its Feedback control), where the page has
 *   them and they do not match data-unless; focus stays on the same control.
 * - "trajectory": a turn's new node on the map (static/js/trajectory.js).
 * - "error": a refusal, shown where the person asked; its data-base-<name>
 *   values go into the open form's hidden fields (docs/adr/0125).
 * - "navigate": go to another thread's page (a branch this tab just made).
 * - "chat": a push too big to send (a long answer) or that may have been
 *   lost: the page asks for the chat from the latest turn it shows on
 *   (GET chat/from/<turn>/: that turn as stored, later ones, the controls).
 * If a patch does not fit what the page shows (it missed a push), the page
 * asks for the whole workspace again (GET workspace/live/), as it does after
 * its socket reconnects. While the socket is down, #connection-status says
 * "Reconnecting…".
 *
 * The page checks the chat with the server too when it may be showing a
 * turn running that is not (docs/adr/0043): after its socket reconnects,
 * when it becomes visible again while it shows a turn running or waiting,
 * and when a running turn has sent nothing for longer than its heartbeat.
 *
 * Controls: plan steps and preferences carry no forms or URLs. One delegated
 * handler per kind (static/js/plan.js, static/js/preferences.js) reads the
 * row's id from its element id (step-<id>, pref-<id>) and posts to the
 * action's URL the panel holds (HAICO.live.post); a step's actions sit in one
 * menu per panel.
 *
 * URLs: the page never builds a path. The server renders each URL that
 * takes a row's id or a turn's number once, with a placeholder for it
 * (workspace/url_templates.py, docs/adr/0081); HAICO.urls.fill puts the
 * value in its place.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});

  HAICO.urls = {
    ROW: ":pk",
    TURN: ":turn",
    fill: function (url, placeholder, value) {
      return url.split(placeholder).join(String(value));
    },
  };

  function inbox() {
    return document.getElementById("live-inbox");
  }

  var STEP_BOX = ":scope > .edit-view > input[type=checkbox]";

  function rowId(li) {
    return li.id.slice(li.id.indexOf("-") + 1);
  }

  function stepNumber(li) {
    var number = li.querySelector(":scope > .edit-view .step-number");
    return number ? number.textContent : "";
  }

  function move(parent, element, before) {
    // moveBefore keeps focus, selection and the state of what is inside.
    if (typeof parent.moveBefore === "function" && element.isConnected) parent.moveBefore(element, before);
    else parent.insertBefore(element, before);
  }

  // --- applying patches -----------------------------------------------------

  var resyncing = false;

  // The newest artifact the centre lists: the server adds the centre to its
  // answer when the thread has a newer one (workspace/views/live.py).
  function newestArtifactListed() {
    var newest = 0;
    document.querySelectorAll("#panel-centre select[name=artifact] option").forEach(function (option) {
      var id = parseInt(option.value, 10);
      if (id > newest) newest = id;
    });
    return newest;
  }

  function resync() {
    var box = inbox();
    var url = box && box.getAttribute("data-live-url");
    if (!url || resyncing || !window.htmx) return;
    if (document.getElementById("panel-centre")) url += (url.indexOf("?") < 0 ? "?" : "&") + "artifacts_through=" + newestArtifactListed();
    resyncing = true;
    htmx.ajax("GET", url, { source: box, swap: "none" }).then(
      function () { resyncing = false; },
      function () { resyncing = false; }
    );
  }

  HAICO.resync = resync;

  // --- the chat as the server has it ------------------------------------------

  // A running turn sends at least a heartbeat every 10 s; this much silence
  // means the page missed its end (HAICO.chatQuietMs: a test's shorter wait).
  var CHAT_QUIET_MS = 25000;
  var chatSyncing = false;
  var chatSyncAgain = false;
  var lastSocketMessage = Date.now();

  function latestTurnShown() {
    var turns = document.querySelectorAll("#chat-messages > article.turn[data-turn]");
    var last = turns.length ? parseInt(turns[turns.length - 1].getAttribute("data-turn"), 10) : 0;
    return isNaN(last) ? 0 : last;
  }

  function chatState() {
    var status = document.getElementById("chat-status");
    return status ? status.getAttribute("data-state") : "idle";
  }

  function syncChat() {
    var list = document.getElementById("chat-messages");
    var url = list && list.getAttribute("data-chat-from-url");
    if (!url || !window.htmx) return;
    if (chatSyncing) {
      chatSyncAgain = true;
      return;
    }
    chatSyncing = true;
    var done = function () {
      chatSyncing = false;
      if (chatSyncAgain) {
        chatSyncAgain = false;
        syncChat();
      }
    };
    htmx.ajax("GET", HAICO.urls.fill(url, HAICO.urls.TURN, latestTurnShown()), { source: list, swap: "none" }).then(done, done);
  }

  HAICO.syncChat = syncChat;

  // A turn the page already shows is never added a second time: the chat
  // fetched above and the socket's push of a new turn can both bring it.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (!detail || !detail.target || detail.target.id !== "chat-messages" || !detail.fragment) return;
    var turns = detail.fragment.querySelectorAll ? detail.fragment.querySelectorAll("article.turn[id]") : [];
    Array.prototype.forEach.call(turns, function (turn) {
      if (document.getElementById(turn.id)) turn.remove();
    });
  });

  // "The owner made you a viewer" stays while turns end (their endings
  // empty the notice for every tab): this page's controls no longer work,
  // and it says why until it is reloaded, or an "editor again" replaces it.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var detail = event.detail;
    if (!detail || !detail.target || detail.target.id !== "chat-notice" || !detail.fragment) return;
    if (detail.target.getAttribute("data-access") !== "viewer") return;
    var incoming = detail.fragment.querySelector ? detail.fragment.querySelector("#chat-notice") : null;
    if (!incoming || !incoming.hasAttribute("data-access")) detail.shouldSwap = false;
  });

  // A push for a part of a turn the page does not show finds nowhere to
  // land: a turn that started while the socket was reconnecting and ends
  // while the chat the page asked for is still on its way, which then shows
  // it running. The chat is asked for again (after the one on its way, if
  // any), rather than waiting for the quiet-turn check (CHAT_QUIET_MS).
  document.addEventListener("htmx:oobErrorNoTarget", function (event) {
    var content = event.detail && event.detail.content;
    if (content && content.id && /^turn-\d+(-|$)/.test(content.id)) syncChat();
  });

  document.addEventListener("htmx:wsAfterMessage", function () { lastSocketMessage = Date.now(); });

  setInterval(function () {
    if (chatState() === "running" && Date.now() - lastSocketMessage > (HAICO.chatQuietMs || CHAT_QUIET_MS)) {
      lastSocketMessage = Date.now();
      syncChat();
    }
  }, 1000);

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && chatState() !== "idle") syncChat();
  });

  // A row from a patch brings its attributes and read view. The morph
  // (static/vendor/idiomorph.min.js, docs/adr/0083) keeps the elements that
  // stay, and with them focus and the menu; what the page added stays too:
  // an open editor (the row's other children), the editor's hidden read
  // view, the plan's one Tab stop, the menu's ARIA state.
  var PAGE_ATTRIBUTES = ["hidden", "tabindex", "aria-haspopup", "aria-expanded"];
  var KEEP_THE_PAGES_OWN = {
    morphStyle: "outerHTML",
    callbacks: {
      beforeAttributeUpdated: function (name, element, change) {
        return change !== "remove" || PAGE_ATTRIBUTES.indexOf(name) < 0;
      },
      beforeNodeRemoved: function (node) {
        var parent = node.parentNode;
        return !(parent && parent.matches && parent.matches("li") && !(node.matches && node.matches(".edit-view")));
      },
    },
  };

  // Put `row` (from a patch) in `list` after the row with id prefix+after.
  // Returns false when that row is not on the page.
  function place(list, row, prefix) {
    var after = row.getAttribute("data-after");
    row.removeAttribute("data-after");
    var anchor = null;
    if (after) {
      anchor = document.getElementById(prefix + after);
      if (!anchor || anchor.parentNode !== list) return false;
    }
    var element = document.getElementById(row.id);
    if (element) Idiomorph.morph(element, row, KEEP_THE_PAGES_OWN);
    else element = row;
    var before = anchor ? anchor.nextElementSibling : list.firstElementChild;
    if (before !== element || element.parentNode !== list) move(list, element, before);
    return true;
  }

  function applyRows(template, prefix, listFor) {
    var fits = true;
    (template.getAttribute("data-remove") || "").split(",").forEach(function (id) {
      var gone = id && document.getElementById(prefix + id);
      if (gone) gone.remove();
    });
    var rows = Array.prototype.slice.call(template.content.children);
    if (template.hasAttribute("data-complete")) {
      var keep = {};
      rows.forEach(function (row) { keep[row.id] = true; });
      document.querySelectorAll('[id^="' + prefix + '"]').forEach(function (element) {
        if (element.matches("li") && !keep[element.id]) element.remove();
      });
    }
    rows.forEach(function (row) {
      var list = listFor(row);
      if (!list || !place(list, document.importNode(row, true), prefix)) fits = false;
    });
    return fits;
  }

  // A row that moves is taken out and put back where moveBefore is missing,
  // which drops focus: give it back to the same element (a row, or the text
  // field of its open editor, with the caret where it was).
  function focusInPlan(steps) {
    var active = document.activeElement;
    if (!active || active === steps || !steps.contains(active)) return function () {};
    var caret = typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
    return function () {
      if (!active.isConnected || document.activeElement === active) return;
      active.focus({ preventScroll: true });
      if (caret) active.setSelectionRange(caret[0], caret[1]);
    };
  }

  function setValue(template) {
    var field = document.getElementById(template.getAttribute("data-target"));
    var value = template.getAttribute("data-value");
    if (!field || field.value === value) return;
    var offered = Array.prototype.some.call(field.options || [], function (option) { return option.value === value; });
    if (offered) field.value = value; // no change event: nothing is sent back
  }

  function swapInPlace(template) {
    var unless = template.getAttribute("data-unless");
    Array.prototype.slice.call(template.content.children).forEach(function (incoming) {
      var existing = incoming.id && document.getElementById(incoming.id);
      if (!existing || (unless && existing.matches(unless))) return;
      // The morph keeps the elements that stay, and focus on them.
      Idiomorph.morph(existing, document.importNode(incoming, true), { morphStyle: "outerHTML" });
      if (window.htmx) window.htmx.process(document.getElementById(incoming.id));
    });
  }

  function apply(template) {
    var kind = template.getAttribute("data-live-patch");
    if (kind === "plan") {
      var steps = document.getElementById("plan-steps");
      if (!steps) return;
      var keep = focusInPlan(steps);
      var fits = applyRows(template, "step-", function () { return steps; });
      if (template.hasAttribute("data-numbers") && !renumber(template.getAttribute("data-numbers"))) fits = false;
      if (!fits) resync();
      planChanged();
      showCount(template.getAttribute("data-done"), template.getAttribute("data-steps"));
      keep();
    } else if (kind === "preferences") {
      if (!document.getElementById("pref-list-hard")) return;
      var fits = applyRows(template, "pref-", function (row) {
        return document.getElementById("pref-list-" + (row.classList.contains("pref-hard") ? "hard" : "soft"));
      });
      if (!fits) resync();
      preferencesChanged();
      if (HAICO.rovingToolbars) HAICO.rovingToolbars(document.getElementById("panel-preferences"));
    } else if (kind === "plan-history") {
      planHistoryChanged(template);
    } else if (kind === "document") {
      document.dispatchEvent(new CustomEvent("haico:document-patch", { detail: { template: template } }));
    } else if (kind === "value") {
      setValue(template);
    } else if (kind === "swap") {
      swapInPlace(template);
    } else if (kind === "trajectory") {
      document.dispatchEvent(new CustomEvent("haico:trajectory-patch", { detail: { template: template } }));
    } else if (kind === "error") {
      showError(template);
    } else if (kind === "resync") {
      // A push was lost on its way here, or a document too big for the socket
      // (naming its version: the editor tells whether this page has it).
      if (template.hasAttribute("data-version") && HAICO.documentResync) HAICO.documentResync(template);
      else resync();
    } else if (kind === "chat") {
      syncChat();
    } else if (kind === "navigate") {
      // This tab's message started a branch (docs/adr/0016): its turn runs there.
      window.location.assign(template.getAttribute("data-url"));
    }
  }

  // --- the plan's history -------------------------------------------------------
  //
  // A push carries no entry, only the oldest and newest ids of the new ones
  // (docs/adr/0092): rendering entries for every plan write cost each write
  // a read, although almost no page has the history open. An open history
  // asks for the entries newer than the newest it shows (GET
  // plan/history/?after=<id>), one request at a time; a push arriving
  // meanwhile makes one more request after it. The ids pushes named stay
  // wanted while the history is open, so an entry is still fetched when the
  // history was read again just before it was written, or when its change
  // committed after a newer one (then from just before it).

  var historyWanted = [];
  var historyFetching = false;
  var historyAgain = false;

  function changeNumber(li) {
    return li.id ? parseInt(li.id.slice(li.id.lastIndexOf("-") + 1), 10) || 0 : 0;
  }

  function historyOpen() {
    var popover = document.getElementById("plan-history");
    return !!popover && popover.matches(":popover-open");
  }

  // Newest first: each entry goes before the first one older than it.
  // Returns whether any was new to the page.
  function addPlanChanges(content, list) {
    var added = false;
    Array.prototype.forEach.call(content.querySelectorAll('li.plan-change[id^="plan-change-"]'), function (entry) {
      if (document.getElementById(entry.id)) return;
      var number = changeNumber(entry);
      var before = Array.prototype.find.call(list.children, function (li) {
        return changeNumber(li) < number;
      });
      list.insertBefore(document.importNode(entry, true), before || null);
      added = true;
    });
    var empty = list.querySelector("[data-history-empty]");
    if (empty && list.querySelector("li[id]")) empty.remove();
    return added;
  }

  function planHistoryChanged(template) {
    if (!historyOpen()) {
      historyWanted = [];
      return;
    }
    ["data-oldest", "data-newest"].forEach(function (name) {
      var id = parseInt(template.getAttribute(name), 10);
      if (id > 0 && historyWanted.indexOf(id) < 0) historyWanted.push(id);
    });
    catchUpHistory();
  }

  function catchUpHistory() {
    if (!historyOpen()) {
      historyWanted = [];
      return;
    }
    var list = document.getElementById("plan-history-list");
    var opener = document.querySelector('[popovertarget="plan-history"][hx-get]');
    if (!list || !opener) return; // still being read: its swap calls again
    var shown = Array.prototype.map.call(list.querySelectorAll("li[id]"), changeNumber).filter(Boolean);
    var newest = shown.length ? Math.max.apply(null, shown) : 0;
    // Below a "Show older changes" row an entry is that button's to bring.
    var oldest = list.querySelector(".history-older") && shown.length ? Math.min.apply(null, shown) : 0;
    historyWanted = historyWanted.filter(function (id) { return id > oldest; });
    var missing = historyWanted.filter(function (id) { return !document.getElementById("plan-change-" + id); });
    if (!missing.length) return;
    if (historyFetching) {
      historyAgain = true;
      return;
    }
    historyFetching = true;
    historyAgain = false;
    var url = new URL(opener.getAttribute("hx-get"), window.location.href);
    url.searchParams.set("after", String(Math.min(newest, Math.min.apply(null, missing) - 1)));
    var added = false;
    var done = function () {
      historyFetching = false;
      // Another push came meanwhile, or this answer was one page of several.
      if (historyAgain || added) catchUpHistory();
    };
    fetch(url.toString(), { credentials: "same-origin", headers: window.HAICO.requestHeaders() })
      .then(function (response) {
        if (!response.ok || response.redirected) return;
        return response.text().then(function (html) {
          var current = document.getElementById("plan-history-list");
          if (!current) return;
          var answer = document.createElement("template");
          answer.innerHTML = html;
          added = addPlanChanges(answer.content, current);
        });
      })
      .then(done, done);
  }

  // The history was read (opened, or again after a reconnect): what pushes
  // named meanwhile may be missing from that reading.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail && event.detail.target && event.detail.target.id === "plan-history") catchUpHistory();
  });

  // After the socket was down the open history may have missed entries: read it again.
  function refreshPlanHistory() {
    var popover = document.getElementById("plan-history");
    var opener = document.querySelector('[popovertarget="plan-history"][hx-get]');
    if (!popover || !opener || !popover.matches(":popover-open") || !window.htmx) return;
    htmx.ajax("GET", opener.getAttribute("hx-get"), { source: opener, target: popover, swap: "innerHTML" });
  }

  function drain(box) {
    Array.prototype.slice.call(box.children).forEach(function (child) {
      if (child.matches("template[data-live-patch]")) apply(child);
      child.remove();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var box = inbox();
    if (!box) return;
    new MutationObserver(function () { drain(box); }).observe(box, { childList: true });
    drain(box);
  });

  // --- the connection ------------------------------------------------------------
  //
  // While the thread's socket is down the page says so, and it tries again
  // within a couple of seconds (htmx's ws extension would wait up to a
  // minute). The server sends a reconnected page the turn running so far or
  // how the last one ended (conversations.consumers); what else it missed
  // is reloaded here: the workspace's rows, as complete patches.

  var RECONNECT_MAX_MS = 2000;
  // Codes after which the ws extension reconnects; any other close is final
  // (a session that ended, a thread that is gone: the chat says why).
  var RECONNECTING_CODES = [1006, 1011, 1012, 1013];

  if (window.htmx) {
    htmx.config.wsReconnectDelay = function (retryCount) {
      var ceiling = Math.min(RECONNECT_MAX_MS, 250 * Math.pow(2, retryCount));
      return ceiling / 2 + Math.random() * ceiling / 2; // jitter: not every page at the same moment
    };
  }

  function connectionStatus(text) {
    var line = document.getElementById("connection-status");
    if (line && line.textContent !== text) line.textContent = text;
  }

  // The server closes a page's socket with this code when its session ends
  // (conversations.consumers): the page says so at once, with where to log
  // in again, before the person types anything (docs/adr/0108).
  var SESSION_ENDED_CODE = 4401;
  var SESSION_ENDED = "Your session has ended (you logged out elsewhere, or it expired). " +
    "Log in again in another tab: this page keeps what you typed.";

  // Or with this one when someone else has signed in in this browser since
  // the page was rendered (the page names its person when it connects).
  var SOMEONE_ELSE_CODE = 4409;
  var SOMEONE_ELSE = "This browser is now signed in as someone else, so this page's chat is closed. " +
    "Log in again as yourself in another tab: this page keeps what you typed.";

  // Or with this one when its person's account has been deactivated: they
  // cannot log in again, so the page does not say to. The socket is opened
  // again like one of an ended session should staff reactivate the account.
  var DEACTIVATED_CODE = 4410;

  var socketWasLost = false;
  // The socket closed because its session ended. It is opened again once a
  // request of the page's goes through (the person has logged in again as
  // themselves, in another tab); coming back to the tab asks the server
  // with a small read of the page's own (the chat after its latest turn),
  // which leaves the notice as it is while the session is still over. So
  // the page is live again without a reload.
  var socketOfEndedSession = null;

  function openSocketAgain() {
    var socket = socketOfEndedSession;
    if (!socket) return;
    socketOfEndedSession = null;
    // What the server said when it closed the socket no longer holds.
    var notice = document.getElementById("chat-notice");
    if (notice) notice.hidden = true;
    socket.reconnect();
  }

  var asking = false;

  function askWhetherSignedInAgain() {
    var list = document.getElementById("chat-messages");
    var url = list && list.getAttribute("data-chat-from-url");
    if (!socketOfEndedSession || asking || !url || document.visibilityState !== "visible") return;
    asking = true;
    fetch(HAICO.urls.fill(url, HAICO.urls.TURN, latestTurnShown()), { headers: HAICO.requestHeaders(), redirect: "manual" })
      .then(function (response) {
        if (response.ok && HAICO.signedInAgain) HAICO.signedInAgain();
        // New news: not logged out any more, but someone else is logged in.
        if (response.headers.get("X-HAICO-Signed-In") === "someone-else" && HAICO.sessionEnded) {
          HAICO.sessionEnded(null, SOMEONE_ELSE);
        }
      })
      .catch(function () { /* offline: the next return to the tab asks again */ })
      .then(function () { asking = false; });
  }

  document.addEventListener("htmx:wsClose", function (event) {
    var close = event.detail && event.detail.event;
    if (close && (close.code === SESSION_ENDED_CODE || close.code === SOMEONE_ELSE_CODE || close.code === DEACTIVATED_CODE)) {
      socketOfEndedSession = event.detail.socketWrapper;
      socketWasLost = true;
      if (close.code === DEACTIVATED_CODE) {
        if (HAICO.sessionEnded) HAICO.sessionEnded(null, HAICO.ACCOUNT_DEACTIVATED, true);
        return;
      }
      if (HAICO.sessionEnded) HAICO.sessionEnded(null, close.code === SESSION_ENDED_CODE ? SESSION_ENDED : SOMEONE_ELSE);
      return;
    }
    if (!close || RECONNECTING_CODES.indexOf(close.code) < 0) return;
    socketWasLost = true;
    connectionStatus("Reconnecting… Changes made meanwhile will show once the connection is back.");
  });
  document.addEventListener("haico:signedInAgain", openSocketAgain);
  document.addEventListener("visibilitychange", askWhetherSignedInAgain);
  window.addEventListener("focus", askWhetherSignedInAgain);
  document.addEventListener("htmx:wsOpen", function () {
    lastSocketMessage = Date.now();
    connectionStatus("");
    if (socketWasLost) {
      socketWasLost = false;
      resync();
      syncChat();
      refreshPlanHistory();
    }
  });

  // --- a socket that died with no word -----------------------------------------
  //
  // A network can drop the socket with no close frame (a laptop asleep, a
  // Wi-Fi change): the browser still says it is open, and no push arrives.
  // When the network comes back, when the tab shows again, and whenever the
  // socket has been quiet for ALIVE_EVERY_MS, the page asks the server for a
  // tiny answer ({"action": "alive"}, conversations.consumers). Any frame
  // heard within ALIVE_WAIT_MS says the socket is alive; none, and it is let
  // go of and opened again as after a dropped connection ("Reconnecting…",
  // then the catching up of htmx:wsOpen above; a chat message on its way is
  // held and sent again, static/js/chat.js) (docs/adr/0157).
  var ALIVE_CHECK = JSON.stringify({ action: "alive" });
  var ALIVE_ANSWER = "<!-- alive -->";
  var ALIVE_EVERY_MS = 30000;
  // Generous: the consumer answers a page's messages one at a time, so a
  // check sent while it waits on the database (a busy or failing one)
  // waits too, and a false alarm costs a reconnection and its resync.
  var ALIVE_WAIT_MS = 10000;
  var lastHeard = Date.now();
  var aliveTimer = null;

  function pageSocket() {
    var el = document.querySelector("#chat-messages[ws-connect], [ws-connect]");
    var data = el && el["htmx-internal-data"];
    return data && data.webSocket ? { el: el, wrapper: data.webSocket } : null;
  }

  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    lastHeard = Date.now();
    // The answer is for this check only: nothing to put in the page.
    if (event.detail && event.detail.message === ALIVE_ANSWER) event.preventDefault();
  });
  document.addEventListener("htmx:wsOpen", function () { lastHeard = Date.now(); });

  function checkAlive() {
    var found = pageSocket();
    var socket = found && found.wrapper.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN || aliveTimer) return;
    var asked = Date.now();
    try {
      socket.send(ALIVE_CHECK);
    } catch (e) { return; /* closing: its close event says so */ }
    aliveTimer = setTimeout(function () {
      aliveTimer = null;
      if (lastHeard >= asked || found.wrapper.socket !== socket || socket.readyState !== WebSocket.OPEN) return;
      letGoOfDeadSocket(found.el, found.wrapper, socket);
    }, ALIVE_WAIT_MS);
  }

  // Closed here, its close event would come only after the browser gives up
  // on the closing handshake (a minute in Chromium), and would then open a
  // second socket over the new one: it is told nothing more, and the page
  // goes on as after a dropped connection (close code 1006), now.
  function letGoOfDeadSocket(el, wrapper, socket) {
    socket.onclose = null;
    socket.onerror = null;
    try { socket.close(); } catch (e) { /* already going */ }
    var lost = new CloseEvent("close", { code: 1006, reason: "no answer to the liveness check", wasClean: false });
    htmx.trigger(el, "htmx:wsClose", { event: lost, socketWrapper: wrapper.publicInterface });
    wrapper.init();
  }

  HAICO.checkSocketAlive = checkAlive;
  window.addEventListener("online", checkAlive);
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") checkAlive();
  });
  setInterval(function () {
    if (Date.now() - lastHeard >= ALIVE_EVERY_MS) checkAlive();
  }, 5000);

  // --- the plan after a patch: numbers, labels, count, checklist -------------

  function stepRows() {
    var list = document.getElementById("plan-steps");
    return list ? Array.prototype.slice.call(list.children).filter(function (li) { return li.matches("li.step"); }) : [];
  }

  function depthOf(li) {
    return parseInt(li.getAttribute("data-depth"), 10) || 0;
  }

  function label(li, number) {
    li.querySelectorAll(".step-number").forEach(function (el) { el.textContent = number; });
    var set = function (selector, attr, text) {
      li.querySelectorAll(selector).forEach(function (el) { el.setAttribute(attr, text); });
    };
    set(STEP_BOX, "aria-label", "Done: step " + number);
    set(".step-menu", "aria-label", "Actions for step " + number);
    set('form[data-edit-form="edit"] input[name=text]', "aria-label", "Text of step " + number);
    set('form[data-edit-form="child"] input[name=text]', "aria-label", "New sub-step of step " + number);
    set('form[data-edit-form="child"] input[name=text]', "placeholder", "Sub-step of " + number + "…");
  }

  function setNumber(li, number) {
    if (li.__labelled === number) return;
    label(li, number);
    li.__labelled = number;
  }

  // Every row's number from the server ("id:number id:number …", in plan
  // order). False when the page's rows are not those rows in that order: it
  // missed a push, and asks for the whole plan again.
  function renumber(numbers) {
    var rows = stepRows();
    var pairs = numbers ? numbers.split(" ") : [];
    var fits = pairs.length === rows.length;
    pairs.forEach(function (pair, i) {
      var colon = pair.indexOf(":");
      var li = document.getElementById("step-" + pair.slice(0, colon));
      if (li !== rows[i]) fits = false;
      if (li) setNumber(li, pair.slice(colon + 1));
    });
    return fits;
  }

  function showCount(done, steps) {
    var count = document.getElementById("plan-count");
    if (!count || done === null || steps === null) return;
    count.textContent = done + "/" + steps + " done";
    count.hidden = steps === "0";
  }

  function planChanged() {
    var rows = stepRows();
    rows.forEach(function (li) {
      var opener = li.querySelector(".step-menu");
      // The menu works only with JavaScript, so this is where it is announced.
      if (opener && !opener.hasAttribute("aria-haspopup")) {
        opener.setAttribute("aria-haspopup", "menu");
        opener.setAttribute("aria-expanded", "false");
      }
      // A row arrives numbered by the server, but an editor open in it is the page's own.
      setNumber(li, stepNumber(li));
    });
    var panel = document.getElementById("panel-plan");
    if (panel) writeChecklist(panel);
    if (HAICO.planRowsChanged) HAICO.planRowsChanged(rows);
  }

  function writeChecklist(panel) {
    var pre = panel.querySelector("#plan-markdown");
    if (!pre) return;
    pre.textContent = stepRows().map(function (li) {
      var box = li.querySelector(STEP_BOX);
      var text = li.querySelector(".edit-view .step-text");
      return "  ".repeat(depthOf(li)) + "- [" + (box && box.checked ? "x" : " ") + "] " +
        stepNumber(li) + " " + (text ? text.textContent : "");
    }).join("\n") || "(no plan yet)";
  }

  HAICO.writeChecklist = writeChecklist;
  // For the rows' controls: static/js/plan.js (a step's menu, forms, keys
  // and drag) and static/js/preferences.js.
  HAICO.live = {
    rowId: rowId,
    stepNumber: stepNumber,
    stepRows: stepRows,
    depthOf: depthOf,
    planChanged: planChanged,
    post: post,
  };

  function preferencesChanged() {
    var count = document.getElementById("pref-count");
    if (!count) return;
    var n = document.querySelectorAll("#panel-preferences .pref-list > li").length;
    count.textContent = String(n);
    count.setAttribute("aria-label", n + " preferences");
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("panel-plan")) planChanged();
  });

  // --- refusals and successes --------------------------------------------------

  function panelNamed(name) {
    return document.querySelector('[data-live-panel="' + name + '"]');
  }

  function clearErrors(panel) {
    if (!panel) return;
    panel.querySelectorAll(".panel-error").forEach(function (el) { el.hidden = true; el.textContent = ""; });
    panel.querySelectorAll("form .form-error").forEach(function (el) { el.remove(); });
  }

  function formError(form) {
    var slot = form.querySelector(".form-error");
    if (!slot) {
      slot = document.createElement("p");
      slot.className = "form-error";
      slot.setAttribute("role", "alert");
      form.appendChild(slot);
    }
    return slot;
  }

  function showError(template) {
    var panel = panelNamed(template.getAttribute("data-panel"));
    if (!panel) return;
    clearErrors(panel);
    var target = template.getAttribute("data-target");
    var rowId = template.getAttribute("data-row");
    var form = null;
    if (target === "add") {
      form = panel.querySelector('form[data-live-form="add"]');
    } else if ((target === "edit" || target === "child") && rowId) {
      var row = panel.querySelector("#step-" + rowId + ", #pref-" + rowId);
      form = row && row.querySelector('form[data-edit-form="' + target + '"]:not([hidden])');
    }
    // Someone changed the row since the form was filled (docs/adr/0125): what
    // is typed stays, its base becomes the row as it is now, so Save again
    // replaces that change knowingly.
    Array.prototype.forEach.call(template.attributes, function (attr) {
      if (!form || attr.name.indexOf("data-base-") !== 0) return;
      var field = form.querySelector('input[type=hidden][name="' + attr.name.slice(10) + '"]');
      if (field) field.value = attr.value;
    });
    var slot = form ? formError(form) : panel.querySelector(".panel-error");
    if (!slot) return;
    slot.textContent = template.content.textContent;
    slot.hidden = false;
  }

  // What an add form sent, so that clearing it after the save never drops
  // what the person has typed since.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = event.detail.elt;
    if (!form || !form.matches || !form.matches("form[data-live-form]")) return;
    form.__sent = {};
    form.querySelectorAll("input[type=text]").forEach(function (field) { form.__sent[field.name] = field.value; });
  });

  // The server says an action worked (HX-Trigger: haico:saved, on the element
  // that asked): an add form clears for the next entry, an edit form closes.
  document.addEventListener("haico:saved", function (event) {
    var source = event.target;
    var panel = source.closest && source.closest("[data-live-panel]");
    clearErrors(panel);
    var form = source.closest && source.closest("form");
    if (!form) return;
    if (form.hasAttribute("data-live-form")) {
      var sent = form.__sent || {};
      form.querySelectorAll("input[type=text]").forEach(function (field) {
        if (field.value === sent[field.name]) field.value = "";
      });
      // Ready for the next entry (a click left focus on the button).
      var first = form.querySelector("input[type=text]");
      if (first && form.contains(document.activeElement) && document.activeElement.tagName === "BUTTON") first.focus();
    } else if (form.hasAttribute("data-edit-form")) {
      var scope = form.closest("[data-edit-scope], li.step, li.pref");
      if (scope) {
        HAICO.closeForms(scope);
        var opener = scope.matches("li.step") ? scope : scope.querySelector("[data-pref-act=edit]");
        if (opener) opener.focus();
      }
    }
  });

  // Settles once the answer is in the page (or the request failed).
  function post(url, source, values) {
    if (!window.htmx) return Promise.resolve();
    return htmx.ajax("POST", url, { source: source, values: values || {}, swap: "none" });
  }

})();
