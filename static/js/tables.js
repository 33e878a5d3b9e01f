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
    var rows = Array.from(body.rows).filter(function (row) { return row.cells.length > column; });
    if (rows.length < 2) return;
    var cell = function (row) { return row.cells[column]; };
    var numeric = rows.every(function (row) {
      var c = cell(row);
      return c.dataset.sortValue !== undefined || c.textContent.trim() === "";
    });
    var sign = direction === "ascending" ? 1 : -1;
    rows.sort(function (a, b) {
      var x = cell(a), y = cell(b);
      var xEmpty = x.textContent.trim() === "", yEmpty = y.textContent.trim() === "";
      if (xEmpty || yEmpty) return xEmpty === yEmpty ? 0 : (xEmpty ? 1 : -1); // blanks last either way
      if (numeric) return sign * (parseFloat(x.dataset.sortValue) - parseFloat(y.dataset.sortValue));
      return sign * collator.compare(x.textContent.trim(), y.textContent.trim());
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("table[data-sortable] .sort-button");
    if (button) sortTable(button);
  });
})();
