/* Words a tab kept for a thread that is gone (docs/adr/0040).
 *
 * A thread page whose thread was deleted, or whose person's share was
 * removed, keeps what could not be saved in the tab's sessionStorage when it
 * goes (static/js/document_editor.js, static/js/chat.js), under
 * "haico:words-lost:<person>:…": the document's text, or a chat message.
 * No page of that thread opens any more, so the thread list shows each of
 * them here once, as plain text to copy, with a Dismiss that drops it. A
 * person the owner made a viewer while they had words unsaved still opens
 * the thread, as a viewer, and reloads it to be one: that page shows the
 * words kept from this thread's pages at its top too (docs/adr/0162). Only
 * the keys naming the person this page is for are read: a tab someone else
 * signs in to later never shows another person's words. The words are put
 * in as text, never as markup.
 */
(function () {
  "use strict";

  var HAICO = (window.HAICO = window.HAICO || {});
  var PREFIX = "haico:words-lost:";

  // `path`: only the words kept from that thread's pages (its keys name the
  // page's path or its document's save address, which starts with it).
  function keptWords(person, path) {
    var found = [];
    try {
      Object.keys(window.sessionStorage).sort().forEach(function (key) {
        if (key.indexOf(PREFIX + person + ":") !== 0) return;
        if (path && key.indexOf(":" + path) < 0) return;
        var kept = null;
        try { kept = JSON.parse(window.sessionStorage.getItem(key) || "null"); } catch (e) { kept = null; }
        if (kept && typeof kept.text === "string" && kept.text.trim()) found.push({ key: key, kept: kept });
      });
    } catch (e) { /* storage refused: nothing was kept */ }
    return found;
  }

  function element(name, className, text) {
    var el = document.createElement(name);
    if (className) el.className = className;
    if (text) el.textContent = text;
    return el;
  }

  function entry(found, number) {
    var kept = found.kept;
    var where = kept.thread ? "“" + kept.thread + "”" : "a thread";
    var what = kept.what === "message" ? "the chat message box" : "the document";
    var item = element("li", "words-kept-item");
    var why = kept.why === "viewer" ? "the owner made you a viewer of it" :
      "the thread was deleted or is no longer shared with you";
    var said = element("p", "", "Words you typed in " + where + " could not be saved: " + why + ". They were in " + what +
      (kept.what !== "message" && kept.title ? " (titled “" + kept.title + "”)" : "") + ". Copy them to keep them:");
    said.id = "words-kept-said-" + number;
    var text = element("textarea", "words-kept-text");
    text.readOnly = true;
    text.value = kept.text;
    text.rows = Math.min(12, Math.max(3, kept.text.split("\n").length));
    text.setAttribute("aria-labelledby", said.id);
    var dismiss = element("button", "btn", "Dismiss");
    dismiss.type = "button";
    dismiss.setAttribute("aria-label", "Dismiss the words typed in " + where);
    dismiss.addEventListener("click", function () {
      try { window.sessionStorage.removeItem(found.key); } catch (e) { /* nothing kept */ }
      var list = item.parentNode;
      item.remove();
      if (list && !list.children.length) list.closest("section").remove();
    });
    item.appendChild(said);
    item.appendChild(text);
    item.appendChild(dismiss);
    return item;
  }

  function show() {
    var person = HAICO.pagePerson ? HAICO.pagePerson() : "";
    var threadsPage = document.querySelector(".threads-page");
    // A thread's page (a viewer's): below the connection status, above the workspace.
    var status = threadsPage ? null : document.getElementById("connection-status");
    var page = threadsPage || (status && status.parentNode);
    if (!person || !page || document.getElementById("words-kept")) return;
    var found = keptWords(person, threadsPage ? "" : window.location.pathname);
    if (!found.length) return;
    var section = element("section", "words-kept");
    section.id = "words-kept";
    section.setAttribute("aria-labelledby", "words-kept-heading");
    var heading = element("h2", "", "Words that could not be saved");
    heading.id = "words-kept-heading";
    section.appendChild(heading);
    var list = element("ul", "words-kept-list");
    found.forEach(function (one, n) { list.appendChild(entry(one, n)); });
    section.appendChild(list);
    var header = threadsPage ? threadsPage.querySelector(".threads-header") : status;
    page.insertBefore(section, header ? header.nextSibling : page.firstChild);
  }

  document.addEventListener("DOMContentLoaded", show);
  // Back to the list from the back-forward cache: words kept since then show too.
  window.addEventListener("pageshow", function (event) { if (event.persisted) show(); });
})();
