/* The read-only staff view of a thread (conversations/staff_view.py).
 *
 * Its socket only listens: when the thread changes, the server sends the
 * page's content again (#staff-workspace, swapped out of band by htmx).
 * Each panel keeps where staff had scrolled it, and the chat stays at its
 * newest turn when it was there.
 */
(function () {
  "use strict";

  var BOXES = ["staff-preferences", "staff-planning", "staff-centre", "staff-chat"];
  var kept = null;

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    if (!event.detail || !event.detail.target || event.detail.target.id !== "staff-workspace") return;
    kept = {};
    BOXES.forEach(function (id) {
      var box = document.getElementById(id);
      if (box) kept[id] = { top: box.scrollTop, atEnd: box.scrollHeight - box.scrollTop - box.clientHeight < 40 };
    });
  });

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    if (!kept || !event.detail || !event.detail.target || event.detail.target.id !== "staff-workspace") return;
    BOXES.forEach(function (id) {
      var box = document.getElementById(id);
      var was = kept[id];
      if (!box || !was) return;
      box.scrollTop = id === "staff-chat" && was.atEnd ? box.scrollHeight : was.top;
    });
    kept = null;
  });
})();
