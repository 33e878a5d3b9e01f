/* The chat composer. Everything else (bubbles, reasoning, tokens, the Send
 * button's disabled state, the Stop button) arrives as server-rendered
 * fragments over the thread's WebSocket; this file only:
 * - sends on Enter (Shift+Enter is a new line) and on Send. The form never
 *   submits natively (Send is not a submit button, and a stray submit is
 *   cancelled), so a message typed before the page's scripts or socket are
 *   ready is never lost in a page load;
 * - before sending, waits for the document's unsaved text to be saved
 *   (static/js/document_editor.js), so the turn's snapshot and the model's first
 *   call see what the person just typed there;
 * - while the socket is not open (the page is still connecting, or it
 *   dropped and reconnects) holds the message, says so, and sends it once
 *   the socket opens (also a click on Send made before this file ran);
 * - clears the composer once the server confirms it stored the message
 *   (#chat-ack, sent to this tab only), so a refused message is never lost;
 *   a socket that closes between the send and the ack keeps it held, to go
 *   again with the id it went with, so the server stores it once
 *   (docs/adr/0013, 0126);
 * - keeps a message being written across a reload of the tab (a draft in
 *   the tab's sessionStorage, per thread and person, dropped once the
 *   message is stored and at log out);
 * - keeps the conversation scrolled to the newest text unless the person
 *   scrolled up to read.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});
  // A document save that never answers must not hold the message forever.
  var DOCUMENT_WAIT_MS = 10000;
  var CONNECTING_TEXT = "Connecting… it will be sent when connected.";
  var NOT_LOGGED_IN_TEXT = "Not sent: you are not logged in here any more. Your message is still in the box; it goes once you log in again.";
  var NOT_SENT_TEXT = "Not sent: your message is still in the box.";
  var GOING_AGAIN_TEXT = "The connection dropped as your message went: once connected it is sent again as it went, " +
    "and runs only once.";
  var CHANGED_SINCE_TEXT = "Your message went as you first sent it; what you changed since is still in the box.";
  var KEEPS_DROPPING_TEXT = "Not sent: the connection dropped each time this message went. It is still in the box: " +
    "send it again once the connection is steady (it still runs only once).";
  var DATABASE_AWAY_TEXT = "The server's database did not answer: your message goes again by itself once it does, " +
    "and runs only once.";
  var TOO_BIG_TEXT = "Not sent: the message with the text it asks about is too long to send at once (over 1 MB). " +
    "Select less of the document and send it again.";
  // A frame bigger than the server takes (daphne's websocket_max_message_size,
  // 1 MiB, which haico_site.serve keeps) closes the socket, as a dropped
  // connection in Chromium (1006): the page would send it again on every
  // reconnect, for ever. Room is left for the headers the ws extension adds.
  var SOCKET_MESSAGE_MAX_BYTES = 1024 * 1024 - 4096;
  // Any message that closes the socket each time it goes (that one, or a
  // proxy's own limit) is sent again at most this many times by itself.
  var DROPS_BEFORE_GIVING_UP = 3;
  // The server closes with these before acting on anything sent since its
  // last ack (conversations.consumers: a refused socket acts on nothing, a
  // session checked before each message), so a message sent into such a
  // socket with no ack was not acted on and can go again (docs/adr/0013).
  var NOT_ACTED_ON_CODES = [4401, 4403, 4404, 4409, 4410, 4429];
  // ... and the page opens the socket again after these two, once the
  // person has logged in again (static/js/live.js).
  var LOGGED_OUT_CODES = [4401, 4409];
  // The person's account was deactivated (4410): they cannot log in again,
  // so nothing is held for a login; the message stays in the box to copy.
  var DEACTIVATED_CODE = 4410;
  var DEACTIVATED_TEXT = "Not sent: your account has been deactivated, so nothing more can be sent or saved here. " +
    "Your message is still in the box: copy it to keep it, and ask whoever runs this HAICO to reactivate the account.";
  // The thread was deleted or is no longer shared with this person (4404).
  var THREAD_LOST_CODE = 4404;
  var THREAD_LOST_TEXT = "Not sent: this thread was deleted or is no longer shared with you. " +
    "Your message is still in the box: copy it to keep it.";

  var lastAck = null;
  var pinned = true;
  var connected = false; // the thread's socket is open
  var waiting = false; // a message waits for the socket
  var preparing = false; // a message waits for the document to save
  var onTheWire = false; // a message was handed to the socket, and no ack has come
  var loggedOut = false; // the socket closed for a session that ended: a message waits for the login
  // The connection dropped with a message on it and no ack: the server may
  // have it, so it goes again exactly as it went (words and id), whatever
  // the box says by then (docs/adr/0126).
  var goingAgain = false;
  var drops = 0; // connections that dropped in a row as this message went
  // The server's database did not answer it: it goes again after this long, doubling up to a limit.
  var againTimer = null;
  var againDelayMs = 2000;
  var deactivated = false; // the socket closed for an account that was deactivated: nothing waits
  var threadLost = false; // the socket closed for a thread deleted or no longer shared

  function messages() {
    return document.getElementById("chat-messages");
  }

  function composer() {
    return document.querySelector('#chat-form textarea[name="message"]');
  }

  function scrollToEnd() {
    var list = messages();
    if (list) list.scrollTop = list.scrollHeight;
  }

  // At most once a frame, however many messages arrive in it: reading
  // scrollHeight lays the chat out, and a long answer streaming fast was
  // laid out once per message, which left the page further and further
  // behind the server (docs/adr/0104).
  var scrollQueued = false;
  function scrollToEndSoon() {
    if (scrollQueued) return;
    scrollQueued = true;
    window.requestAnimationFrame(function () {
      scrollQueued = false;
      if (pinned) scrollToEnd();
    });
  }

  // The thread's socket is open: htmx:wsOpen / wsClose keep `connected`,
  // and the socket itself is asked too, in case it opened before this file ran.
  function isConnected() {
    if (connected) return true;
    var el = document.querySelector("[ws-connect]");
    var data = el && el["htmx-internal-data"];
    var ws = data && data.webSocket;
    return !!(ws && ws.socket && ws.socket.readyState === 1);
  }

  function showPending(text) {
    var line = document.getElementById("chat-pending");
    if (!line) return;
    line.textContent = text || "";
    line.hidden = !text;
  }

  function documentSaved() {
    if (!HAICO.documentSaved) return Promise.resolve(true);
    return Promise.race([
      HAICO.documentSaved(),
      new Promise(function (resolve) { setTimeout(function () { resolve(false); }, DOCUMENT_WAIT_MS); }),
    ]);
  }

  function transmit() {
    var form = document.getElementById("chat-form");
    var field = composer();
    waiting = false;
    showPending("");
    if (!form || !field) return;
    if (!(goingAgain && sentAs) && !field.value.trim()) return;
    // Until the ack: a socket that closes first decides what becomes of it (htmx:wsClose below).
    onTheWire = true;
    if (!(goingAgain && sentAs)) idFor(field.value);
    // The ws extension sends the form's fields; the text stays in the box until the ack.
    htmx.trigger(form, "haico:send");
  }

  function send() {
    var field = composer();
    var button = document.getElementById("chat-send");
    if (!field || !field.value.trim() || (button && button.disabled) || preparing) return;
    drops = 0; // the person sends it: their call, whatever the connection did before
    preparing = true;
    documentSaved().then(function () {
      preparing = false;
      if (isConnected() && window.htmx) {
        transmit();
      } else if (deactivated || threadLost) {
        showPending(deactivated ? DEACTIVATED_TEXT : THREAD_LOST_TEXT);
      } else {
        waiting = true;
        showPending(loggedOut ? NOT_LOGGED_IN_TEXT : goingAgain ? GOING_AGAIN_TEXT : CONNECTING_TEXT);
      }
    });
  }

  HAICO.sendMessage = send;

  // --- the message's id (docs/adr/0126) ---------------------------------------
  // Each message goes with a random id, the same every time the same words
  // go again until the server acks them: a connection that drops as a
  // message goes cannot say whether the server took it, so the page sends it
  // again and the server, finding the id stored, acks the turn it began
  // instead of starting a second one. Kept with the draft, so a reload in
  // between sends the same id too. Other words are another message.
  var SENT_PREFIX = "haico.sent:";
  var sentAs = null; // {text, id}: the words in the box as last handed to the socket

  function newMessageId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes); // also where crypto.randomUUID is not (a plain-HTTP host)
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }

  function sentKey() {
    var key = draftKey();
    return key ? SENT_PREFIX + key.slice(DRAFT_PREFIX.length) : "";
  }

  function idFor(text) {
    if (!sentAs || sentAs.text !== text) sentAs = { text: text, id: newMessageId() };
    var key = sentKey();
    try {
      if (key) window.sessionStorage.setItem(key, JSON.stringify(sentAs));
    } catch (e) { /* refused: this page still keeps it */ }
    return sentAs.id;
  }

  function forgetId() {
    sentAs = null;
    var key = sentKey();
    try {
      if (key) window.sessionStorage.removeItem(key);
    } catch (e) { /* refused */ }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var key = sentKey();
    var kept = null;
    try { kept = key && JSON.parse(window.sessionStorage.getItem(key) || "null"); } catch (e) { /* refused or unreadable */ }
    if (kept && typeof kept.text === "string" && typeof kept.id === "string") sentAs = kept;
  });

  // --- the draft ----------------------------------------------------------------
  // A reload, a click on another thread or a crash of the tab's page must
  // not take a message being written. sessionStorage ends with the tab, so
  // nothing is left on a shared computer; the key names the person, so a
  // draft is never shown to someone who logs in later in the same tab.
  var DRAFT_PREFIX = "haico.draft:";

  function draftKey() {
    var person = HAICO.pagePerson ? HAICO.pagePerson() : "";
    return person ? DRAFT_PREFIX + person + ":" + window.location.pathname : "";
  }

  function keepDraft(text) {
    var key = draftKey();
    if (!key) return;
    try {
      if (text) window.sessionStorage.setItem(key, text);
      else window.sessionStorage.removeItem(key);
    } catch (e) { /* storage full or refused: the text is still in the box */ }
  }

  // A message in the box of a thread that was deleted or is no longer
  // shared with this person can never be sent: it is kept in the tab for
  // the thread list, which shows it once to copy (static/js/words_kept.js).
  // The key names the person, as the draft's does.
  var PAGE_LOAD = Date.now().toString(36) + Math.random().toString(36).slice(2, 6);

  function keepLostMessage() {
    var box = composer();
    var person = HAICO.pagePerson ? HAICO.pagePerson() : "";
    if (!person) return;
    // One entry per page load (static/js/document_editor.js's lostKey says why).
    var key = "haico:words-lost:" + person + ":message:" + window.location.pathname + ":" + PAGE_LOAD;
    var title = document.getElementById("thread-title");
    try {
      if (box && box.value.trim()) {
        window.sessionStorage.setItem(key, JSON.stringify({
          thread: title ? title.textContent.trim() : "", what: "message", text: box.value,
        }));
      } else {
        window.sessionStorage.removeItem(key);
      }
      // Kept there instead: the draft would only come back on a page that cannot open.
      var draft = draftKey();
      if (draft) window.sessionStorage.removeItem(draft);
    } catch (e) { /* storage refused: the text is still in the box */ }
  }

  window.addEventListener("pagehide", function () {
    if (threadLost) keepLostMessage();
  });

  document.addEventListener("input", function (event) {
    if (!event.target.matches || !event.target.matches('#chat-form textarea[name="message"]')) return;
    // A message on its way stays so while its words are changed: it may
    // still be stored (the ack leaves the changed words in the box), and a
    // connection dropping under it sends it again as it went.
    keepDraft(event.target.value);
  });

  document.addEventListener("DOMContentLoaded", function () {
    var field = composer(), key = draftKey();
    if (!field || !key || field.value) return;
    var draft = null;
    try { draft = window.sessionStorage.getItem(key); } catch (e) { /* refused */ }
    if (draft) field.value = draft;
  });

  // Logging out here drops this tab's drafts.
  document.addEventListener("submit", function (event) {
    if (!event.target.hasAttribute || !event.target.hasAttribute("data-log-out")) return;
    try {
      Object.keys(window.sessionStorage).forEach(function (key) {
        if (key.indexOf(DRAFT_PREFIX) === 0 || key.indexOf(SENT_PREFIX) === 0) window.sessionStorage.removeItem(key);
      });
    } catch (e) { /* refused */ }
  }, true);

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (!field.matches || !field.matches('#chat-form textarea[name="message"]')) return;
    event.preventDefault();
    send();
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("#chat-send")) send();
  });

  document.addEventListener("submit", function (event) {
    if (event.target.id !== "chat-form") return;
    event.preventDefault();
    send();
  }, true);

  document.addEventListener("htmx:wsOpen", function () {
    connected = true;
    if (waiting) transmit();
  });

  // The socket closed with a message on it and no ack (docs/adr/0013). It
  // stays held and goes again on the next socket (after logging in again,
  // for a session that ended), with the id it went with: after a close that
  // is not one of the server's refusals (the network dropped, the server
  // restarted) the server may have stored it and only its ack been lost,
  // and then it acks that turn instead of starting a second (docs/adr/0126).
  document.addEventListener("htmx:wsClose", function (event) {
    connected = false;
    var close = event.detail && event.detail.event;
    var code = close ? close.code : 0;
    var queue = event.detail && event.detail.socketWrapper && event.detail.socketWrapper.queue;
    // What the ws extension took while the socket was closing never went:
    // it would send it on the next socket. It is held here instead, to go once.
    for (var i = queue ? queue.length - 1 : -1; i >= 0; i--) {
      if (queue[i].sendElt && queue[i].sendElt.id === "chat-form") {
        queue.splice(i, 1);
        onTheWire = false;
        waiting = true;
      }
    }
    if (LOGGED_OUT_CODES.indexOf(code) >= 0) loggedOut = true;
    if (code === DEACTIVATED_CODE || code === THREAD_LOST_CODE) {
      // Nothing can be sent here any more: whatever is in the box stays there, said so.
      if (code === DEACTIVATED_CODE) deactivated = true;
      else threadLost = true;
      onTheWire = false;
      waiting = false;
      var box = composer();
      if (box && box.value.trim()) {
        showPending(deactivated ? DEACTIVATED_TEXT : THREAD_LOST_TEXT);
        if (threadLost) keepLostMessage();
      }
      return;
    }
    if (onTheWire) {
      onTheWire = false;
      waiting = true;
      // Once the server may have it, it goes as it went until it is acked or
      // refused, whatever closes the next socket (a session ending, say).
      var mayHaveIt = NOT_ACTED_ON_CODES.indexOf(code) < 0;
      goingAgain = goingAgain || mayHaveIt;
      if (mayHaveIt && ++drops >= DROPS_BEFORE_GIVING_UP) {
        // Held as it went (words and id): a Send sends it so, and it still runs once.
        waiting = false;
        showPending(KEEPS_DROPPING_TEXT);
        return;
      }
    }
    if (!waiting) return;
    if (loggedOut) {
      showPending(NOT_LOGGED_IN_TEXT);
    } else if (NOT_ACTED_ON_CODES.indexOf(code) >= 0) {
      // Not opened again (the thread is gone, too many pages): the notice says why.
      waiting = false;
      showPending(NOT_SENT_TEXT);
    } else {
      showPending(goingAgain ? GOING_AGAIN_TEXT : CONNECTING_TEXT);
    }
  });

  document.addEventListener("haico:signedInAgain", function () {
    loggedOut = false;
    deactivated = false;
    if (waiting) showPending(CONNECTING_TEXT);
  });

  // A message still held (the socket is connecting) is not on the server yet.
  window.addEventListener("beforeunload", function (event) {
    if (!waiting && !preparing) return;
    event.preventDefault();
    event.returnValue = "";
  });

  // Send was clicked before this file ran (the page was still loading;
  // static/js/early_send.js noted it).
  if (HAICO.earlySend) {
    HAICO.earlySend = false;
    send();
  }

  document.addEventListener(
    "scroll",
    function (event) {
      var list = messages();
      if (event.target !== list) return;
      pinned = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    },
    true
  );

  // --- "Ask about selection": the passage of the document text the message is about ---
  //
  // Taken from the "Document text" editor when the person asks, shown as a
  // chip above the Message box until it is removed or the message is stored,
  // and sent with the message as {start, end, text}: offsets in characters
  // (code points, as the server counts them, not the editor's UTF-16 units).
  // The server checks it against the saved document and drops it, saying
  // so, if that text is no longer there.

  var selection = null;

  function showSelection(value, hint) {
    selection = value;
    var chip = document.getElementById("chat-selection");
    var note = document.querySelector("[data-chat-selection-hint]");
    if (chip) {
      chip.hidden = !value;
      var text = chip.querySelector("[data-chat-selection-text]");
      if (text) text.textContent = value ? (value.text.length > 120 ? value.text.slice(0, 120) + "…" : value.text) : "";
    }
    if (note) { note.textContent = hint || ""; note.hidden = !hint; }
  }

  function editorSelection() {
    var editor = document.querySelector('#doc-form textarea[name="content"]');
    if (!editor) return null;
    var from = editor.selectionStart, to = editor.selectionEnd;
    if (!(to > from)) return null;
    var value = editor.value;
    return {
      start: Array.from(value.slice(0, from)).length,
      end: Array.from(value.slice(0, to)).length,
      text: value.slice(from, to),
    };
  }

  // The button is offered only while there is a selection to ask about
  // (the editor keeps its selection when focus moves to the chat).
  function offerAskButton() {
    var button = document.querySelector("[data-chat-ask-selection]");
    if (button) button.hidden = !editorSelection();
  }
  ["selectionchange", "select", "keyup", "mouseup", "focusin", "input"].forEach(function (name) {
    document.addEventListener(name, offerAskButton, true);
  });
  document.addEventListener("htmx:afterSettle", offerAskButton);

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target : null;
    if (!target) return;
    if (target.closest("[data-chat-ask-selection]")) {
      var value = editorSelection();
      showSelection(value, value ? "" : "Select some text in the document first, then ask about it.");
      var field = composer();
      if (value && field) field.focus();
    } else if (target.closest("[data-chat-selection-remove]")) {
      showSelection(null, "");
      var box = composer();
      if (box) box.focus();
    }
  });

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (!form || form.id !== "chat-form") return;
    if (sentAs) event.detail.parameters.client_message_id = sentAs.id;
    if (goingAgain && sentAs) event.detail.parameters.message = sentAs.text;
    if (selection) event.detail.parameters.selection = { start: selection.start, end: selection.end, text: selection.text };
    if (new Blob([JSON.stringify(event.detail.parameters)]).size > SOCKET_MESSAGE_MAX_BYTES) {
      event.preventDefault();
      onTheWire = false;
      waiting = false;
      showPending(TOO_BIG_TEXT);
    }
  });

  // The server could not act on the message (its database did not answer)
  // and says the page sends it again: held as it went, it goes again shortly,
  // on this socket or the next (docs/adr/0126).
  function goAgainLater() {
    waiting = true;
    goingAgain = true;
    showPending(DATABASE_AWAY_TEXT);
    window.clearTimeout(againTimer);
    againTimer = window.setTimeout(function () {
      againTimer = null;
      if (waiting && isConnected()) transmit();
    }, againDelayMs);
    againDelayMs = Math.min(againDelayMs * 2, 15000);
  }

  document.addEventListener("htmx:wsAfterMessage", function (event) {
    var ack = document.getElementById("chat-ack");
    var turn = ack ? ack.getAttribute("data-turn") : "";
    var frame = event.detail && typeof event.detail.message === "string" ? event.detail.message : "";
    // A notice said with no ack answers the message with a refusal (the
    // notice says why): the message is in the box, not on its way any more.
    // Not an emptied notice (every socket that opens is sent one), nor one
    // saying why the socket closes next (its close code decides). A message
    // shown as not sent (no model to answer it) is refused too.
    var note = frame.indexOf('id="chat-notice"') !== -1 ? document.getElementById("chat-notice") : null;
    var said = note && !note.hidden && note.textContent.trim() && !note.hasAttribute("data-closing");
    var unsent = frame.indexOf("turn-unsent") !== -1;
    var acked = turn && turn !== lastAck;
    if (onTheWire && !acked && (unsent || said)) {
      onTheWire = false;
      if (!unsent && note.hasAttribute("data-again")) {
        goAgainLater();
      } else {
        // Refused (the notice says why, until a turn's end empties it): what
        // the box says now is what goes next, when the person sends it.
        goingAgain = false;
        drops = 0;
        showPending(NOT_SENT_TEXT);
      }
    }
    if (acked) {
      lastAck = turn;
      var went = sentAs ? sentAs.text : null;
      onTheWire = false;
      goingAgain = false;
      drops = 0;
      againDelayMs = 2000;
      forgetId();
      waiting = false;
      loggedOut = false;
      showPending("");
      // Words changed after they went (while the connection was back) are
      // another message, not yet sent: they stay.
      var field = composer();
      if (field && went !== null && field.value !== went) {
        if (field.value.trim()) showPending(CHANGED_SINCE_TEXT);
      } else {
        if (field) field.value = "";
        keepDraft("");
      }
      showSelection(null, "");
      pinned = true;
    }
    if (pinned) scrollToEndSoon();
  });

  document.addEventListener("DOMContentLoaded", scrollToEnd);

  // A note the server put on this page for a branch just opened (?note=…,
  // shown in #chat-notice) is said once: a reload should not say it again.
  if (window.history && window.history.replaceState && /[?&]note=/.test(window.location.search)) {
    var url = new URL(window.location.href);
    url.searchParams.delete("note");
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
  }
  // A chat that was hidden (another tab of a phone's views) has nothing to
  // scroll until it shows: keep it at the newest text when it does.
  document.addEventListener("DOMContentLoaded", function () {
    var list = messages();
    if (!list || !window.ResizeObserver) return;
    new ResizeObserver(function () {
      if (cardToShow && cardToShow.isConnected && list.offsetParent) {
        scrollTo(cardToShow, list);
        cardToShow = null;
      } else if (pinned) {
        scrollToEnd();
      }
    }).observe(list);
  });

  // --- a pending approval is put before the person (docs/adr/0017, 0056) ---------
  //
  // The card is scrolled into the chat's view and, unless the person is
  // typing somewhere (the document, the message box), focused, which also
  // shows the chat on a phone or beside the document. While they type it is
  // announced instead, and shown once they look.
  var TYPING = "textarea, select, [contenteditable], input:not([type=hidden]):not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit])";

  function typing() {
    var active = document.activeElement;
    return !!(active && active !== document.body && active.matches && active.matches(TYPING) && !active.closest(".approval"));
  }

  var cardToShow = null; // a card that came while the chat was out of sight

  function scrollTo(card, list) {
    pinned = false;
    list.scrollTop = Math.max(0, card.offsetTop - 8);
  }

  function showApproval(card) {
    var list = messages();
    if (!card || !list || !card.querySelector(".approval-actions")) return;
    if (typing()) {
      // Where the chat shows, the card comes into its view; nothing else moves.
      if (list.offsetParent) scrollTo(card, list);
      else cardToShow = card;
      if (HAICO.flash) HAICO.flash("The assistant asks before making a change: approve or reject it in the chat.");
      return;
    }
    if (HAICO.revealView) HAICO.revealView(card);
    scrollTo(card, list);
    card.focus({ preventScroll: true });
  }

  // A turn's Feedback control pushed at its end replaces only the running
  // turn's placeholder: a page that shows the control (or has it open) keeps it.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && /^turn-\d+-feedback$/.test(target.id) && !target.hasAttribute("data-feedback-pending")) {
      event.detail.shouldSwap = false;
    }
  });

  // After htmx has settled the swap (the new element takes its own attributes then).
  var shownCard = null;
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || !/^turn-\d+-approval$/.test(target.id)) return;
    setTimeout(function () {
      var card = document.getElementById(target.id);
      if (card === shownCard) return; // one swap reports itself again with every later one of its message
      shownCard = card;
      showApproval(card);
    }, 0);
  });

  document.addEventListener("DOMContentLoaded", function () {
    var cards = document.querySelectorAll("#chat-messages .approval.is-pending");
    if (cards.length) showApproval(cards[cards.length - 1]);
  });

  // --- older turns brought in ---------------------------------------------------
  //
  // The chat is a polite live region, so that what the assistant writes is
  // read out. Turns fetched in place of "Show earlier turns" are history: a
  // screen reader would read every one of them out. The region is quiet from
  // the request until they are in, then a status line says how many came.
  // Quiet a little longer than the swap itself: browsers work out what a
  // live region announces after the change, not during it.
  var EARLIER_SETTLE_MS = 300;
  var quietChat = null; // {list, observer, before} while earlier turns are on their way

  function countTurns(list) {
    return list.querySelectorAll(":scope > article.turn").length;
  }

  function speakAgain() {
    if (!quietChat) return;
    var state = quietChat;
    quietChat = null;
    state.observer.disconnect();
    state.list.setAttribute("aria-live", "polite");
    var came = countTurns(state.list) - state.before;
    var status = document.getElementById("chat-earlier-status");
    if (status && came > 0) {
      status.textContent = came === 1 ? "1 earlier turn shown above" : came + " earlier turns shown above";
    }
  }

  function bringsEarlierTurns(event) {
    var target = event.detail && event.detail.target;
    return !!target && target.id === "chat-earlier";
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var list = messages();
    if (!bringsEarlierTurns(event) || !list || quietChat) return;
    var control = event.detail.target;
    var observer = new MutationObserver(function () {
      if (list.contains(control)) return; // not replaced yet
      observer.disconnect();
      window.setTimeout(speakAgain, EARLIER_SETTLE_MS);
    });
    quietChat = { list: list, observer: observer, before: countTurns(list) };
    list.setAttribute("aria-live", "off");
    observer.observe(list, { childList: true });
  });

  // A failed fetch leaves the control where it was (the event reaches the
  // document only then): the chat speaks again at once.
  document.addEventListener("htmx:afterRequest", function (event) {
    if (bringsEarlierTurns(event) && event.detail.failed) speakAgain();
  });

  // --- a link to a turn older than the chat shows (#turn-N, a version arrow) ----
  //
  // The page renders only the latest turns (docs/adr/0095): every turn from
  // N on is fetched in place of the "Show earlier turns" control, then turn
  // N is scrolled into view.
  document.addEventListener("DOMContentLoaded", function () {
    var match = /^#turn-(\d+)$/.exec(window.location.hash);
    var earlier = document.getElementById("chat-earlier");
    if (!match || !earlier || !window.htmx) return;
    var wanted = parseInt(match[1], 10);
    if (document.getElementById("turn-" + wanted) || !(wanted < parseInt(earlier.getAttribute("data-before"), 10))) return;
    htmx.ajax("GET", earlier.getAttribute("data-url") + "?through=" + wanted, { target: "#chat-earlier", swap: "outerHTML" }).then(function () {
      var turn = document.getElementById("turn-" + wanted);
      if (!turn) return;
      pinned = false;
      turn.scrollIntoView({ block: "start" });
    });
  });
})();
