// cairn inspector: live updates, time travel and keys on top of pages that
// work without this script. No dependencies, no build step.
(() => {
  "use strict";
  const $ = (sel, root = document) => root.querySelector(sel);
  const root = document.documentElement;
  root.classList.add("js");

  // Light and dark: the system's choice unless the button chose.
  const saved = localStorage.getItem("cairn-theme");
  if (saved === "light" || saved === "dark") root.dataset.theme = saved;
  const dark = () => root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
  const toggleTheme = () => {
    root.dataset.theme = dark() ? "light" : "dark";
    localStorage.setItem("cairn-theme", root.dataset.theme);
  };
  $("#theme")?.addEventListener("click", toggleTheme);

  // Times are printed in UTC; the title gives the reader's local time.
  const localize = (scope) => {
    for (const t of scope.querySelectorAll("time[datetime]")) {
      const d = new Date(t.dateTime);
      if (!isNaN(d)) t.title = d.toLocaleString();
    }
  };
  localize(document);

  const fetchText = async (url, headers = {}) => {
    const r = await fetch(url, { headers, credentials: "same-origin" });
    if (r.status === 401) { location.href = "/login?next=" + encodeURIComponent(location.pathname + location.search); return null; }
    if (!r.ok) throw new Error(url + ": " + r.status);
    return { text: await r.text(), headers: r.headers };
  };

  // Keys.
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.target.closest('input:not([type="range"]):not([type="checkbox"]), textarea, select, [contenteditable]')) return;
    const click = (sel) => { const a = $(sel); if (a) { e.preventDefault(); a.click(); } };
    switch (e.key) {
      case "/": { const q = $("#q"); if (q) { e.preventDefault(); q.focus(); q.select(); } break; }
      case "t": { const at = $("#at"); if (at) { e.preventDefault(); at.focus(); } break; }
      case "n": click('a[rel="next"]'); break;
      case "p": click('a[rel="prev"]'); break;
      case "d": toggleTheme(); break;
    }
  });

  // The sessions page: the first page follows the store.
  const table = $("#sessions");
  if (table && table.dataset.live === "true") {
    const body = $("#session-rows");
    let last = null;
    setInterval(async () => {
      if (document.hidden) return;
      try {
        const r = await fetchText(location.pathname + location.search, { "X-Cairn-Fragment": "session-rows" });
        if (!r) return;
        if (r.text !== last) { body.innerHTML = r.text; localize(body); }
        last = r.text;
      } catch (_) { /* the next tick tries again */ }
    }, 2000);
  }

  // The session page.
  const tl = $("#timeline");
  if (!tl) return;
  const id = tl.dataset.id;
  const base = "/sessions/" + encodeURIComponent(id);
  const slider = $("#at"), out = $("#at-out"), statePanel = $("#state"), head = $("#session-head");
  const from = new URLSearchParams(location.search).get("from") || "";
  let to = +tl.dataset.to, last = +tl.dataset.last;
  const latest = tl.dataset.latest === "true";
  let following = +slider.value === last;

  const mark = (seq) => {
    for (const li of tl.querySelectorAll("li.at")) li.classList.remove("at");
    const li = document.getElementById("seq-" + seq);
    if (li) li.classList.add("at");
  };

  // Time travel: the state panel follows the slider.
  let travelTimer = 0, travelSeq = 0;
  const showState = async (at) => {
    const seq = ++travelSeq;
    out.value = "#" + at;
    try {
      const r = await fetchText(base + "/state?at=" + at + "&from=" + from);
      if (!r || seq !== travelSeq) return;
      statePanel.innerHTML = r.text;
      localize(statePanel);
      mark(at);
      const u = new URL(location.href);
      u.searchParams.set("at", at);
      history.replaceState(null, "", u);
    } catch (_) { /* keep the panel as it was */ }
  };
  slider.addEventListener("input", () => {
    following = +slider.value === last;
    out.value = "#" + slider.value;
    clearTimeout(travelTimer);
    travelTimer = setTimeout(() => showState(+slider.value), 120);
  });
  tl.addEventListener("click", (e) => {
    const a = e.target.closest("a.travel-to");
    if (!a) return;
    e.preventDefault();
    slider.value = a.dataset.seq;
    following = +slider.value === last;
    showState(+a.dataset.seq);
  });
  mark(+slider.value);

  // The live tail: the store's new events arrive as server-sent events;
  // the page fetches their rows and, when the status changes, its head.
  let busy = false, again = false;
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        if (!latest) break;
        const r = await fetchText(base + "/rows?after=" + to);
        if (!r) return;
        const tmp = document.createElement("template");
        tmp.innerHTML = r.text;
        const rows = tmp.content.querySelectorAll("li.ev");
        if (rows.length) {
          to = +rows[rows.length - 1].dataset.seq;
          tl.append(tmp.content);
          localize(tl);
          // Keep the page small: at most two pages of rows.
          while (tl.children.length > 400) tl.firstElementChild.remove();
          $("#tl-range").firstChild.textContent = "events …–" + to.toLocaleString("en") + " of ";
        }
        last = Math.max(last, +r.headers.get("Cairn-Last-Seq"));
        $("#tl-last").textContent = last.toLocaleString("en");
        if (to < last) again = true;
        const status = r.headers.get("Cairn-Status");
        if (status && status !== head.dataset.status) {
          const h = await fetchText(base + "/head");
          if (h) { head.innerHTML = h.text; head.dataset.status = status; localize(head); }
        }
      } while (again);
      slider.max = last;
      if (following) { slider.value = last; showState(last); }
    } catch (_) {
      /* the next event tries again */
    } finally {
      busy = false;
    }
  };
  if (window.EventSource) {
    const es = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/stream?after=" + last);
    let timer = 0;
    es.onmessage = (e) => {
      try { last = Math.max(last, JSON.parse(e.data).seq); } catch (_) { /* ignore */ }
      clearTimeout(timer);
      timer = setTimeout(refresh, 80);
    };
    es.addEventListener("gone", () => {
      es.close();
      head.insertAdjacentHTML("afterbegin", '<p class="notice" role="alert">This session was deleted or has expired.</p>');
    });
  }
})();
