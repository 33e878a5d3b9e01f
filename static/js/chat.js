/* The chat composer. Everything else (bubbles, reasoning, tokens, the Send
 * button's disabled state, the Stop button) arrives as server-rendered
 * fragments over the thread's WebSocket; this file only:
 * - sends on Enter (Shift+Enter is a new line);
 * - clears the composer once the server confirms it stored the message
 *   (#chat-ack, sent to this tab only), so a refused message is never lost;
 * - keeps the conversation scrolled to the newest text unless the person
 *   scrolled up to read.
 */
(function () {
  "use strict";

  var lastAck = null;
  var pinned = true;

  function messages() {
    return document.getElementById("chat-messages");
  }

  function scrollToEnd() {
    var list = messages();
    if (list) list.scrollTop = list.scrollHeight;
  }

  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (!field.matches || !field.matches('#chat-form textarea[name="message"]')) return;
    event.preventDefault();
    var send = document.getElementById("chat-send");
    if (send && send.disabled) return;
    if (!field.value.trim()) return;
    field.form.requestSubmit();
  });

  document.addEventListener(
    "scroll",
    function (event) {
      var list = messages();
      if (event.target !== list) return;
      pinned = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    },
    true
  );

  document.addEventListener("htmx:wsAfterMessage", function () {
    var ack = document.getElementById("chat-ack");
    var turn = ack ? ack.getAttribute("data-turn") : "";
    if (turn && turn !== lastAck) {
      lastAck = turn;
      var field = document.querySelector('#chat-form textarea[name="message"]');
      if (field) field.value = "";
      pinned = true;
    }
    if (pinned) scrollToEnd();
  });

  document.addEventListener("DOMContentLoaded", scrollToEnd);
})();
