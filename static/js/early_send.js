/* Loaded before the page body (not deferred, so it is listening from the
 * start): a Send clicked before static/js/chat.js has run is remembered,
 * and chat.js sends that message when it runs. A listener here rather than
 * an inline onclick keeps the page free of inline handlers (a Content
 * Security Policy can forbid them; tests/browser/test_xss.py looks for any). */
(function () {
  "use strict";
  var HAICO = (window.HAICO = window.HAICO || {});
  document.addEventListener(
    "click",
    function (event) {
      if (HAICO.sendMessage) return; // chat.js is running and sends it itself
      var button = event.target && event.target.closest && event.target.closest("#chat-send");
      if (button && !button.disabled) HAICO.earlySend = true;
    },
    true
  );
})();
