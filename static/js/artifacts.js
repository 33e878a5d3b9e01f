/* A new artifact from the agent while the person has unsaved document text:
 * the centre panel is not replaced; a banner says so and offers to show it
 * once the text is saved. Loaded after document_editor.js (HAICO.documentEditor).
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
  var editor = HAICO.documentEditor;
  var currentForm = editor.currentForm, hasUnsavedWork = editor.hasUnsavedWork, whenSaved = editor.whenSaved;

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var panel = event.detail.target;
    if (!panel || panel.id !== "panel-centre") return;
    var form = panel.querySelector("#doc-form");
    if (!form || !hasUnsavedWork(form)) return;
    event.preventDefault();
    var fragment = event.detail.fragment;
    var incoming = fragment && (fragment.firstElementChild || fragment);
    showAgentBanner(panel, incoming);
  });

  function showAgentBanner(panel, incoming) {
    var banner = panel.querySelector("[data-agent-banner]");
    if (!banner) return;
    var text = banner.querySelector("[data-agent-banner-text]");
    var artifactButton = banner.querySelector("[data-agent-banner-artifact]");
    var incomingSelect = incoming && incoming.querySelector && incoming.querySelector("select[name=artifact]");
    var select = panel.querySelector("select[name=artifact]");
    if (incomingSelect && select) {
      // Keep the selector current (new artifacts listed) without leaving the editor.
      var keep = select.value;
      select.innerHTML = incomingSelect.innerHTML;
      select.value = keep;
    }
    var artifactId = incoming && incoming.dataset ? incoming.dataset.artifactId : "";
    if (!(incoming && incoming.dataset && incoming.dataset.view === "artifact" && artifactId)) return;
    var option = incomingSelect && incomingSelect.querySelector("option[value='" + artifactId + "']");
    var label = option ? option.textContent.trim() : "a new artifact";
    text.textContent = "The agent added “" + label + "”; your unsaved edits are kept.";
    artifactButton.dataset.artifactId = artifactId;
    artifactButton.hidden = false;
    banner.hidden = false;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var panel = target.closest("#panel-centre");
    if (!panel) return;

    if (target.closest("[data-agent-banner-dismiss]")) {
      panel.querySelector("[data-agent-banner]").hidden = true;
      return;
    }
    var show = target.closest("[data-agent-banner-artifact]");
    if (show) {
      var url = panel.dataset.centreUrl + "?artifact=" + encodeURIComponent(show.dataset.artifactId);
      var go = function () { htmx.ajax("GET", url, { target: "#panel-centre", swap: "outerHTML" }); };
      var form = currentForm();
      if (form) whenSaved(form, go); else go();
    }
  });
})();
