/* The preferences' controls: lock, edit (a form built from the panel's
 * template) and delete. Rows carry no forms or URLs: the row's id is in its
 * element id (pref-<id>) and the action posts to the URL the panel holds for
 * it (data-lock-url, data-delete-url), the id filled in. static/js/live.js
 * applies the patches.
 */
(function () {
  "use strict";

  var HAICO = window.HAICO;
  var rowId = HAICO.live.rowId, post = HAICO.live.post;

  function actionUrl(li, act) {
    var panel = li.closest("#panel-preferences");
    return HAICO.urls.fill(panel.getAttribute("data-" + act + "-url"), HAICO.urls.ROW, rowId(li));
  }

  function prefForm(scope) {
    var panel = scope.closest("#panel-preferences");
    var template = panel && panel.querySelector('template[data-pref-form="edit"]');
    if (!template || !template.content.firstElementChild) return null;
    var pk = rowId(scope);
    var form = template.content.firstElementChild.cloneNode(true);
    form.setAttribute("data-built", "");
    ["action", "hx-post"].forEach(function (attr) {
      form.setAttribute(attr, HAICO.urls.fill(form.getAttribute(attr), HAICO.urls.ROW, pk));
    });
    var title = scope.querySelector(".pref-title");
    var subtitle = scope.querySelector(".pref-subtitle");
    form.elements.title.defaultValue = title ? title.textContent : "";
    form.elements.subtitle.defaultValue = subtitle ? subtitle.textContent : "";
    var kind = scope.classList.contains("pref-hard") ? "hard" : "soft";
    form.elements.kind.querySelectorAll("option").forEach(function (option) {
      option.defaultSelected = option.value === kind;
    });
    // What it was filled with goes with it (docs/adr/0125).
    HAICO.shown(form, "was_title", form.elements.title.defaultValue);
    HAICO.shown(form, "was_subtitle", form.elements.subtitle.defaultValue);
    HAICO.shown(form, "was_kind", kind);
    scope.querySelector(":scope > .edit-view").insertAdjacentElement("afterend", form);
    if (window.htmx) window.htmx.process(form);
    return form;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#panel-preferences [data-pref-act]");
    if (!button) return;
    var li = button.closest("li.pref");
    var act = button.getAttribute("data-pref-act");
    if (act === "lock") {
      post(actionUrl(li, "lock"), li, { locked: button.hasAttribute("data-locked") ? "0" : "1" });
    } else if (act === "edit") {
      HAICO.openForm(li, "edit", prefForm);
    } else if (act === "delete") {
      var title = li.querySelector(".pref-title");
      if (window.confirm("Delete the preference “" + (title ? title.textContent : "") + "”?")) post(actionUrl(li, "delete"), li);
    }
  });
})();
