/* HAICO activity log: new entries pushed while the log is closed.
 *
 * conversations.live pushes each new entry to the top of #activity-entries
 * (an entry marked .is-new). Open, the person sees it there; closed, the
 * summary shows how many arrived since it was last opened. Opening resets
 * the count and reloads the log from the server (the "activity-opened"
 * event its hx-trigger waits for).
 */
(function () {
  "use strict";

  function setUnread(log, count) {
    var badge = log.querySelector(".activity-unread");
    if (!badge) return;
    log.dataset.unread = String(count);
    var number = badge.querySelector(".activity-unread-count");
    if (number) number.textContent = String(count);
    badge.hidden = count === 0;
  }

  function watch(log) {
    if (log.dataset.activityWatched) return;
    log.dataset.activityWatched = "1";
    new MutationObserver(function (mutations) {
      if (log.open) return;
      var added = 0;
      mutations.forEach(function (mutation) {
        mutation.addedNodes.forEach(function (node) {
          if (node.nodeType === 1 && node.matches(".activity-entry.is-new")) added += 1;
        });
      });
      if (added) setUnread(log, Number(log.dataset.unread || 0) + added);
    }).observe(log, { childList: true, subtree: true });
    log.addEventListener("toggle", function () {
      if (!log.open) return;
      setUnread(log, 0);
      // Loads the entries (hx-trigger="activity-opened"): a trigger filter
      // such as toggle[target.open] is compiled with eval, which the
      // Content-Security-Policy refuses.
      if (window.htmx) window.htmx.trigger(log, "activity-opened");
    });
  }

  function start() {
    var log = document.getElementById("activity-log");
    if (log) watch(log);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
  // The chat panel can be swapped in again (a thread's page rebuilt).
  document.addEventListener("htmx:afterSettle", start);
})();
