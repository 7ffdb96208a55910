// ssebench view: follows a run's dialog.jsonl while it grows (the only script; pages work without it).
// It asks /dialog/...?offset=N for the events written since N: HTML the server escaped.
(function () {
  "use strict";
  var timeline = document.getElementById("timeline");
  if (!timeline || !timeline.dataset.follow) return;
  var status = document.getElementById("live-status");
  var src = timeline.dataset.src;
  var next = timeline.dataset.next || "0";
  if (status) status.hidden = false;
  function poll() {
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
            if (status) status.textContent = "the run's session has ended (reload for its grade)";
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
})();
