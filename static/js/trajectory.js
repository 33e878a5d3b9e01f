/* The trajectory map and a turn's preview (docs/adr/0016).
 *
 * - The map scrolls inside its region; the current turn (aria-current) is
 *   brought into view on load and whenever the map changes.
 * - After a turn ends its node arrives alone (a "trajectory" live patch:
 *   the node, the edges into it, the canvas size), not the whole map. It is
 *   put in only if this map has the lanes the patch was laid out for
 *   (data-layout); otherwise (a branch was made or removed since this page
 *   was built) the map is fetched whole.
 * - Once the page has joined its thread's pushes it is told what its map
 *   should show (a "trajectory" patch with data-check: the lanes, how many
 *   nodes of each status); a map that shows something else (a node pushed
 *   before the join) is fetched whole. One fetch at a time: a node pushed
 *   while one is on its way may be newer than what it brings, so the map
 *   is fetched once more after it (docs/adr/0156).
 * - A node's preview is fetched by htmx into #trajectory-preview (one
 *   delegated handler: a node carries only its lane and turn).
 * - "Continue from here" creates nothing: it marks the chat form so the next
 *   message sent carries the turn to continue from, and the server forks
 *   the thread then (conversations.consumers). Closing the preview, or
 *   opening another turn, takes the mark off.
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
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

  // Each node names its lane and turn; the map lists each lane's preview URL,
  // the turn left to fill in.
  function openPreview(node) {
    var map = node.closest("[data-urls]");
    var urls = (map.getAttribute("data-urls") || "").split(" ");
    var url = urls[Number(node.getAttribute("data-lane"))];
    if (!url || !window.htmx) return;
    url = HAICO.urls.fill(url, HAICO.urls.TURN, node.getAttribute("data-turn"));
    htmx.ajax("GET", url, { target: "#trajectory-preview", swap: "outerHTML" });
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

  // --- "Open larger": the same map, spaced so every label shows in full -----------
  //
  // A copy of the map (no ids) with its lanes spread from LANE to WIDE_LANE
  // pixels apart and its nodes WIDE_NODE wide; the edges, drawn for the
  // narrow lanes, are stretched to match (an affine map of x that puts each
  // node's centre where it was). The layout constants are those of
  // conversations.trajectory.layout.
  var PAD = 6, LANE = 150, NODE = 136, WIDE_LANE = 440, WIDE_NODE = 420;

  function fillLarge(dialog) {
    var body = dialog.querySelector("[data-trajectory-large]");
    var map = document.getElementById("trajectory-map");
    if (!body || !map) return;
    var copy = map.cloneNode(true);
    copy.removeAttribute("id");
    copy.removeAttribute("hx-swap-oob");
    var scale = WIDE_LANE / LANE;
    var shift = PAD + WIDE_NODE / 2 - scale * (PAD + NODE / 2);
    var lanes = 0;
    copy.querySelectorAll(".tnode").forEach(function (node) {
      var lane = Number(node.getAttribute("data-lane"));
      lanes = Math.max(lanes, lane + 1);
      node.style.left = PAD + lane * WIDE_LANE + "px";
      node.style.width = WIDE_NODE + "px";
    });
    var width = 2 * PAD + Math.max(lanes - 1, 0) * WIDE_LANE + WIDE_NODE;
    var canvas = copy.querySelector(".trajectory-canvas");
    var svg = copy.querySelector("svg");
    if (canvas) canvas.style.width = width + "px";
    if (svg) {
      svg.setAttribute("width", width);
      var group = document.createElementNS("http://www.w3.org/2000/svg", "g");
      group.setAttribute("transform", "matrix(" + scale + " 0 0 1 " + shift + " 0)");
      while (svg.firstChild) group.appendChild(svg.firstChild);
      svg.appendChild(group);
    }
    body.replaceChildren(copy);
  }

  function openLarge() {
    var dialog = document.getElementById("trajectory-dialog");
    if (!dialog || dialog.open) return;
    fillLarge(dialog);
    dialog.showModal();
    var current = dialog.querySelector(".tnode[data-current]") || dialog.querySelector(".tnode");
    if (current) {
      current.scrollIntoView({ block: "center", inline: "nearest" });
      current.focus();
    }
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-trajectory-enlarge]")) return openLarge();
    var dialog = event.target.closest("#trajectory-dialog");
    if (dialog && (event.target === dialog || event.target.closest("[data-trajectory-dialog-close]"))) return dialog.close();
    var target = event.target.closest("[data-trajectory-continue], [data-trajectory-close], .tnode");
    if (!target) return;
    if (target.matches(".tnode")) {
      clearContinue(); // looking at another turn is looking again
      if (dialog) dialog.close();
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
    if (event.key === "Escape" && event.target.closest && event.target.closest("#trajectory-dialog")) return; // the dialog closes itself
    if (event.key === "Escape" && document.querySelector("section#trajectory-preview")) closePreview();
  });

  // The map's fetch on its way, and whether another must follow it.
  var fetching = false, fetchAgain = false;

  function reloadMap() {
    var box = document.getElementById("trajectory-scroll");
    var url = box && box.getAttribute("data-map-url");
    if (!url || !window.htmx) return;
    if (fetching) {
      fetchAgain = true;
      return;
    }
    fetching = true;
    function done() {
      fetching = false;
      if (fetchAgain) {
        fetchAgain = false;
        reloadMap();
      }
    }
    // Its own source: htmx queues requests per source element, and a
    // preview's request (from the body) would otherwise hold this one back.
    htmx.ajax("GET", url, { source: box, target: "#trajectory-map", swap: "outerHTML" }).then(done, done);
  }

  // How many nodes of each status the map draws, as the server counts them
  // (conversations.trajectory.layout.nodes_key): "complete:5 failed:1".
  function nodesKey(map) {
    var counts = {};
    map.querySelectorAll(".tnode").forEach(function (node) {
      var status = "complete";
      node.classList.forEach(function (name) {
        if (name.indexOf("tnode-") === 0) status = name.slice(6);
      });
      counts[status] = (counts[status] || 0) + 1;
    });
    return Object.keys(counts).sort().map(function (status) { return status + ":" + counts[status]; }).join(" ");
  }

  // The map draws all edges of one kind as one path of subpaths ("M…V…M…C…",
  // conversations/trajectory/render.py); a pushed edge is one subpath.
  function sameEdge(svg, path) {
    var d = path.getAttribute("d");
    return Array.prototype.some.call(svg.children, function (edge) {
      if (edge.getAttribute("class") !== path.getAttribute("class")) return false;
      return (edge.getAttribute("d") || "").split("M").some(function (part) { return "M" + part === d; });
    });
  }

  document.addEventListener("haico:trajectory-patch", function (event) {
    var template = event.detail.template;
    var map = document.getElementById("trajectory-map");
    if (template.hasAttribute("data-check")) {
      if (map && (map.getAttribute("data-layout") !== template.getAttribute("data-layout") ||
          nodesKey(map) !== template.getAttribute("data-nodes"))) reloadMap();
      return;
    }
    var canvas = map && map.querySelector(".trajectory-canvas");
    var svg = canvas && canvas.querySelector("svg.trajectory-edges");
    if (fetching || !svg || map.getAttribute("data-layout") !== template.getAttribute("data-layout")) {
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
    if (box) new MutationObserver(function () {
      scrollCurrentIntoView();
      // A turn ended while the larger map is open: it shows the new map too.
      var dialog = document.getElementById("trajectory-dialog");
      if (dialog && dialog.open) fillLarge(dialog);
    }).observe(box, { childList: true });
  });
})();
