/* Sortable tables in artifacts. Loaded on the owner's and the staff workspace pages. */
(function () {
  "use strict";

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function sortTable(button) {
    var th = button.closest("th");
    var table = button.closest("table");
    var column = parseInt(button.dataset.sortColumn, 10);
    var direction = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("thead th").forEach(function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", direction);
    var body = table.tBodies[0];
    var all = Array.from(body.rows);
    // Each row's key is read once, not on every comparison: reading a cell's
    // text and collating it per comparison froze a 10 000-row table's page
    // for seconds (docs/adr/0141).
    var numeric = true;
    var keyed = [], short = [];
    all.forEach(function (row, index) {
      if (row.cells.length <= column) { short.push(row); return; }
      var c = row.cells[column];
      var text = c.textContent.trim();
      if (c.dataset.sortValue === undefined && text !== "") numeric = false;
      keyed.push({ row: row, index: index, text: text, value: c.dataset.sortValue });
    });
    if (keyed.length < 2) return;
    keyed.forEach(function (k) {
      k.empty = k.text === "";
      k.key = numeric ? parseFloat(k.value) : k.text;
    });
    var sign = direction === "ascending" ? 1 : -1;
    keyed.sort(function (x, y) {
      if (x.empty || y.empty) {
        if (x.empty === y.empty) return x.index - y.index;
        return x.empty ? 1 : -1; // blanks last either way
      }
      var order = numeric ? x.key - y.key : collator.compare(x.key, y.key);
      return order ? sign * order : x.index - y.index; // stable: ties keep their order
    });
    // The body is emptied and filled in one go each, not moved row by row.
    // Rows without the column come first, as appending the sorted ones after them left them.
    body.replaceChildren();
    var fragment = document.createDocumentFragment();
    short.forEach(function (row) { fragment.appendChild(row); });
    keyed.forEach(function (k) { fragment.appendChild(k.row); });
    body.appendChild(fragment);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("table[data-sortable] .sort-button");
    if (button) sortTable(button);
  });
})();
