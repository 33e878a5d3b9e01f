/* The trajectory map and a turn's preview (docs/adr/0016).
 *
 * - The map scrolls inside its region; the current turn (aria-current) is
 *   brought into view on load and whenever the map changes.
 * - After a turn ends its node arrives alone (a "trajectory" live patch:
 *   the node, the edges into it, the canvas size), not the whole map. It is
 *   put in only if this map has the lanes the patch was laid out for
 *   (data-layout); otherwise (a branch was made or removed since this page
 *   was built) the map is fetched whole.
 * - A node's preview is fetched by htmx into #trajectory-preview (one
 *   delegated handler: a node carries only its lane and turn).
 * - "Continue from here" creates nothing: it marks the chat form so the next
 *   message sent carries the turn to continue from, and the server forks
 *   the thread then (conversations.consumers). Closing the preview, or
 *   opening another turn, takes the mark off.
 */
(function () {
  "use strict";

  var FIELDS = ["continue_thread", "continue_turn"];

  function scrollCurrentIntoView() {
    var box = document.getElementById("trajectory-scroll");
    var node = box && box.querySelector(".tnode[data-current]");
    if (!node) return;
    var top = node.offsetTop, left = node.offsetLeft;
    if (top < box.scrollTop || top + node.offsetHeight > box.scrollTop + box.clientHeight) {
      box.scrollTop = Math.max(0, top - box.clientHeight / 2);
    }
    if (left < box.scrollLeft || left + node.offsetWidth > box.scrollLeft + box.clientWidth) {
      box.scrollLeft = Math.max(0, left - 8);
    }
  }

  function chatForm() {
    return document.getElementById("chat-form");
  }

  function clearContinue() {
    var form = chatForm();
    if (!form) return;
    FIELDS.forEach(function (name) {
      var input = form.querySelector('input[name="' + name + '"]');
      if (input) input.remove();
    });
    form.removeAttribute("data-continuing");
  }

  function setContinue(thread, turn) {
    var form = chatForm();
    if (!form) return;
    clearContinue();
    [["continue_thread", thread], ["continue_turn", turn]].forEach(function (pair) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = pair[0];
      input.value = pair[1];
      form.appendChild(input);
    });
    form.setAttribute("data-continuing", turn);
  }

  // Each node names its lane and turn; the map lists each lane's preview URL.
  function openPreview(node) {
    var map = node.closest("#trajectory-map");
    var urls = (map.getAttribute("data-urls") || "").split(" ");
    var url = urls[Number(node.getAttribute("data-lane"))];
    if (!url || !window.htmx) return;
    htmx.ajax("GET", url + node.getAttribute("data-turn") + "/", { target: "#trajectory-preview", swap: "outerHTML" });
  }

  function closePreview() {
    var preview = document.getElementById("trajectory-preview");
    if (!preview) return;
    var slot = document.createElement("div");
    slot.id = "trajectory-preview";
    slot.className = "trajectory-preview";
    slot.hidden = true;
    preview.replaceWith(slot);
    clearContinue();
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-trajectory-continue], [data-trajectory-close], .tnode");
    if (!target) return;
    if (target.matches(".tnode")) {
      clearContinue(); // looking at another turn is looking again
      openPreview(target);
      return;
    }
    if (target.matches("[data-trajectory-close]")) {
      closePreview();
      return;
    }
    var preview = target.closest("#trajectory-preview");
    setContinue(preview.getAttribute("data-continue-thread"), preview.getAttribute("data-continue-turn"));
    var note = preview.querySelector("[data-trajectory-continuing]");
    if (note) note.hidden = false;
    var box = chatForm() && chatForm().querySelector("textarea[name=message]");
    if (box) box.focus();
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && document.querySelector("section#trajectory-preview")) closePreview();
  });

  function reloadMap() {
    var box = document.getElementById("trajectory-scroll");
    var url = box && box.getAttribute("data-map-url");
    if (url && window.htmx) htmx.ajax("GET", url, { target: "#trajectory-map", swap: "outerHTML" });
  }

  function sameEdge(svg, path) {
    return Array.prototype.some.call(svg.children, function (edge) {
      return edge.getAttribute("d") === path.getAttribute("d") && edge.getAttribute("class") === path.getAttribute("class");
    });
  }

  document.addEventListener("haico:trajectory-patch", function (event) {
    var template = event.detail.template;
    var map = document.getElementById("trajectory-map");
    var canvas = map && map.querySelector(".trajectory-canvas");
    var svg = canvas && canvas.querySelector("svg.trajectory-edges");
    if (!svg || map.getAttribute("data-layout") !== template.getAttribute("data-layout")) {
      reloadMap();
      return;
    }
    var node = document.importNode(template.content.querySelector(".tnode"), true);
    var selector = '.tnode[data-lane="' + node.getAttribute("data-lane") + '"][data-turn="' + node.getAttribute("data-turn") + '"]';
    if (node.hasAttribute("data-current")) {
      // The turn before stays on this thread's path; only the newest is the current one.
      canvas.querySelectorAll(".tnode[data-current]").forEach(function (old) {
        old.removeAttribute("data-current");
        old.removeAttribute("aria-current");
      });
    }
    var existing = canvas.querySelector(selector);
    if (existing) existing.replaceWith(node); // a turn that waited for an approval, now ended
    else canvas.appendChild(node);
    Array.prototype.slice.call(template.content.querySelectorAll("svg > path")).forEach(function (path) {
      if (!sameEdge(svg, path)) svg.appendChild(document.importNode(path, true));
    });
    var width = template.getAttribute("data-width"), height = template.getAttribute("data-height");
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    scrollCurrentIntoView();
  });

  document.addEventListener("DOMContentLoaded", function () {
    scrollCurrentIntoView();
    var box = document.getElementById("trajectory-scroll");
    if (box) new MutationObserver(scrollCurrentIntoView).observe(box, { childList: true });
  });
})();
