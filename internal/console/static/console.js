// The live decisions page: decisions arrive as server-sent events and are
// drawn at most once per frame, newest first, keeping the newest `keep`
// rows. Arrivals the page has not drawn yet are capped too: when the page
// falls behind, it drops the oldest of them (counted) instead of queueing.
// Text goes in with textContent only: nothing a server or an agent named
// is ever parsed as markup.
(function () {
  "use strict";
  var table = document.getElementById("live");
  if (!table) { return; }
  var body = table.tBodies[0];
  var status = document.getElementById("status");
  var keep = 200, pending = [], shown = 0, droppedHere = 0, droppedThere = 0, scheduled = false;

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) { td.className = cls; }
    tr.appendChild(td);
  }
  function row(e) {
    var tr = document.createElement("tr");
    tr.dataset.id = e.id;
    tr.tabIndex = 0;
    cell(tr, e.time); cell(tr, e.agent); cell(tr, e.method);
    var td = document.createElement("td");
    var a = document.createElement("a");
    a.href = "/decisions/" + encodeURIComponent(e.id);
    a.textContent = e.name || "(none)";
    td.appendChild(a); tr.appendChild(td);
    cell(tr, e.verdict, "v-" + e.verdict); cell(tr, e.link || "-"); cell(tr, e.source || "-");
    cell(tr, e.ms.toFixed(3) + " ms");
    return tr;
  }
  function say() {
    status.textContent = "Live: " + shown + " decision(s) shown; dropped: " + droppedThere + " by the gateway, " + droppedHere + " by this page.";
  }
  function draw() {
    scheduled = false;
    var frag = document.createDocumentFragment();
    for (var i = pending.length - 1; i >= 0; i--) { frag.appendChild(row(pending[i])); }
    shown += pending.length;
    pending = [];
    body.insertBefore(frag, body.firstChild);
    while (body.rows.length > keep) { body.deleteRow(-1); }
    say();
  }
  var es = new EventSource(table.dataset.stream);
  es.addEventListener("open", function () { status.textContent = "Live: waiting for decisions."; });
  es.addEventListener("error", function () { status.textContent = "The stream is interrupted; reconnecting…"; });
  es.addEventListener("decision", function (m) {
    var e = JSON.parse(m.data);
    droppedThere = e.dropped;
    pending.push(e);
    if (pending.length > keep) { droppedHere += pending.length - keep; pending.splice(0, pending.length - keep); }
    if (!scheduled) { scheduled = true; requestAnimationFrame(draw); }
  });
  body.addEventListener("click", function (ev) {
    var tr = ev.target.closest("tr");
    if (tr && ev.target.tagName !== "A") { location.href = "/decisions/" + encodeURIComponent(tr.dataset.id); }
  });
  body.addEventListener("keydown", function (ev) {
    var tr = ev.target.closest("tr");
    if (tr && ev.key === "Enter") { location.href = "/decisions/" + encodeURIComponent(tr.dataset.id); }
  });
})();
