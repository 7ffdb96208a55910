// ssebench view's only script; every page works without it. Two jobs:
// 1. a page that carries a version (main[data-version]) asks body[data-version-src] for the
//    current one every 2 s; when it changed (a run started or ended), the page is fetched again
//    and its <main> swapped in place: no reload, the ticked boxes kept.
// 2. a live run's dialog (#timeline[data-follow]) asks /dialog/...?offset=N every second for
//    the events written since N: HTML the server escaped.
(function () {
  "use strict";
  var PAGE_POLL_MS = 2000;

  function follow() {
    var timeline = document.getElementById("timeline");
    if (!timeline || !timeline.dataset.follow || timeline.dataset.following) return;
    timeline.dataset.following = "1";
    var status = document.getElementById("live-status");
    var src = timeline.dataset.src;
    var next = timeline.dataset.next || "0";
    if (status) status.hidden = false;
    function poll() {
      if (!document.body.contains(timeline)) return; // the page was swapped: its own follower runs
      fetch(src + "?offset=" + encodeURIComponent(next), { cache: "no-store" })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          var offset = response.headers.get("X-Next-Offset");
          var complete = response.headers.get("X-Complete") === "1";
          return response.text().then(function (html) {
            if (html.trim()) {
              var none = document.getElementById("no-dialog");
              if (none) none.hidden = true;
              timeline.insertAdjacentHTML("beforeend", html);
            }
            if (offset) { next = offset; timeline.dataset.next = offset; }
            if (complete) {
              if (status) status.textContent = "the run's session has ended (its grade follows when the run ends)";
              return;
            }
            setTimeout(poll, 1000);
          });
        })
        .catch(function (error) {
          if (status) status.textContent = "live update paused (" + error.message + "); retrying";
          setTimeout(poll, 3000);
        });
    }
    setTimeout(poll, 500);
  }

  function swap(main, html) {
    var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
    if (!fresh) return;
    var ticked = {};
    main.querySelectorAll("input[type=checkbox]:checked").forEach(function (box) { ticked[box.value] = true; });
    main.innerHTML = fresh.innerHTML;
    main.dataset.version = fresh.dataset.version || "";
    main.querySelectorAll("input[type=checkbox]").forEach(function (box) { if (ticked[box.value]) box.checked = true; });
    follow();
  }

  function watch() {
    var src = document.body.dataset.versionSrc;
    var main = document.getElementById("main");
    if (!src || !main || !main.dataset.version) return;
    var note = document.getElementById("page-live");
    if (note) { note.hidden = false; note.textContent = "live"; }
    function poll() {
      fetch(src, { cache: "no-store" })
        .then(function (response) { if (!response.ok) throw new Error("HTTP " + response.status); return response.json(); })
        .then(function (data) {
          if (data.version === main.dataset.version) return null;
          return fetch(location.href, { cache: "no-store" }).then(function (response) {
            if (!response.ok) throw new Error("HTTP " + response.status);
            return response.text().then(function (html) { swap(main, html); });
          });
        })
        .then(function () { if (note) note.textContent = "live"; })
        .catch(function (error) { if (note) note.textContent = "live updates paused (" + error.message + ")"; })
        .then(function () { setTimeout(poll, PAGE_POLL_MS); });
    }
    setTimeout(poll, PAGE_POLL_MS);
  }

  follow();
  watch();
})();
