// memsearch ui: the only script the pages load (the Content-Security-Policy allows no other, and no inline one).
// It adds two conveniences; every page works without it.
"use strict";

// "/" focuses the search box (or opens the search page), as in many tools; not while typing in a field.
document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return;
  event.preventDefault();
  const box = document.getElementById("q");
  if (box) { box.focus(); box.select(); } else { window.location.assign("/search"); }
});

// The timeline refreshes itself while the hooks write: the server renders (and escapes) the list, the script
// swaps it in. Parsed with DOMParser, so nothing in it runs.
document.addEventListener("DOMContentLoaded", () => {
  const holder = document.getElementById("timeline-items");
  const live = document.getElementById("live");
  const status = document.getElementById("live-status");
  if (!holder || !holder.dataset.refresh) return;
  const url = holder.dataset.refresh;
  let last = null;
  const refresh = async () => {
    if (live && !live.checked) return;
    if (document.hidden) return;
    try {
      const reply = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!reply.ok) { if (status) status.textContent = `Refresh failed (${reply.status}); is memsearch ui still running?`; return; }
      const html = await reply.text();
      if (html === last) return;
      const announce = last !== null;
      last = html;
      const doc = new DOMParser().parseFromString(html, "text/html");
      holder.replaceChildren(...Array.from(doc.body.childNodes).map((n) => document.adoptNode(n)));
      if (announce && status) status.textContent = `New items at ${new Date().toLocaleTimeString()}.`;
    } catch (err) {
      if (status) status.textContent = "Refresh failed: the viewer is not reachable.";
    }
  };
  window.setInterval(refresh, Number(holder.dataset.every) || 5000);
});
