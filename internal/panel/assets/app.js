// The panel's only script: it keeps the page live. When the server says
// that what the pages show changed (server-sent events), it fetches the
// page again and swaps the main content, keeping focus and scroll. Every
// control works without it: forms post and the server redirects.
(function () {
  "use strict";
  if (!window.EventSource || !window.fetch) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "X-Panel-Refresh": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main[data-live]");
        var cur = document.querySelector("main[data-live]");
        if (!next || !cur) return;
        var flash = cur.querySelector(".flash");
        if (flash && !next.querySelector(".flash")) next.insertBefore(flash.cloneNode(true), next.firstChild);
        if (next.innerHTML === cur.innerHTML) return;
        var focused = document.activeElement, key = focused && focused.getAttribute("aria-label");
        var y = window.scrollY;
        cur.replaceWith(next);
        if (key) {
          var all = next.querySelectorAll("[aria-label]");
          for (var i = 0; i < all.length; i++) if (all[i].getAttribute("aria-label") === key) { all[i].focus({ preventScroll: true }); break; }
        }
        window.scrollTo(0, y);
        document.dispatchEvent(new CustomEvent("panel:updated"));
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/events");
  es.addEventListener("change", function (e) {
    var cur = document.querySelector("main[data-live]");
    if (cur && cur.getAttribute("data-version") !== e.data) refresh();
  });
})();
