"""The web page at ``/``: recent stories as cards; a card opens to its members side by side,
the keeper marked and the passages each member shares with the keeper highlighted (runs of
5 words in common, after lower-casing, as the index compares them)."""

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>neardup: stories and their copies</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #222; }
  header { padding: 14px 22px; background: #1f3a5f; color: #fff; display: flex; gap: 18px; align-items: baseline; }
  header h1 { font-size: 19px; margin: 0; }
  header .stats { opacity: .85; font-size: 13px; }
  main { padding: 18px 22px; }
  #cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 14px; }
  .card { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 12px 14px; cursor: pointer; }
  .card:hover, .card:focus { border-color: #1f3a5f; outline: none; box-shadow: 0 1px 6px rgba(0,0,0,.12); }
  .card .meta { font-size: 12px; color: #666; margin-bottom: 6px; }
  .card .size { float: right; background: #1f3a5f; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 12px; }
  #detail { margin-top: 22px; }
  #detail h2 { font-size: 17px; }
  .members { display: flex; gap: 12px; overflow-x: auto; align-items: flex-start; }
  .member { flex: 0 0 360px; background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 10px 12px; }
  .member.keeper { border: 2px solid #2e7d32; }
  .member h3 { font-size: 14px; margin: 0 0 4px; word-break: break-all; }
  .badge { display: inline-block; font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #2e7d32; color: #fff; }
  .badge.alt { background: #777; }
  .member .meta { font-size: 12px; color: #666; margin-bottom: 6px; }
  .member .text { white-space: pre-wrap; font-size: 13.5px; }
  mark { background: #ffe58a; padding: 0; }
  .empty { color: #666; }
  button#back { margin-bottom: 10px; }
</style>
</head>
<body>
<header><h1>neardup</h1><span class="stats" id="stats"></span></header>
<main>
  <section id="list">
    <h2 style="font-size:16px">Recent stories with copies</h2>
    <div id="cards"><p class="empty">Loading…</p></div>
  </section>
  <section id="detail" hidden></section>
</main>
<script>
"use strict";
const K = 5;
function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function tokens(text) {
  const out = [];
  const re = /[\p{L}\p{M}\p{N}\p{Pc}]+/gu;
  let m;
  while ((m = re.exec(text)) !== null) out.push({w: m[0].toLowerCase(), s: m.index, e: m.index + m[0].length});
  return out;
}
function grams(toks) {
  const g = new Set();
  for (let i = 0; i + K <= toks.length; i++) g.add(toks.slice(i, i + K).map(t => t.w).join(" "));
  return g;
}
// Highlight the tokens of `text` covered by a K-word run that also occurs in `other`.
function highlight(text, otherGrams) {
  const toks = tokens(text);
  const mark = new Array(toks.length).fill(false);
  for (let i = 0; i + K <= toks.length; i++) {
    if (otherGrams.has(toks.slice(i, i + K).map(t => t.w).join(" "))) for (let j = i; j < i + K; j++) mark[j] = true;
  }
  let html = "", pos = 0, i = 0;
  while (i < toks.length) {
    if (!mark[i]) { i++; continue; }
    let j = i;
    while (j + 1 < toks.length && mark[j + 1]) j++;
    html += esc(text.slice(pos, toks[i].s)) + '<mark class="shared">' + esc(text.slice(toks[i].s, toks[j].e)) + "</mark>";
    pos = toks[j].e; i = j + 1;
  }
  return html + esc(text.slice(pos));
}
function when(t) {
  if (t == null) return "no time";
  const d = new Date(t * 1000);  // (an index made before times were checked may hold one past year 9999)
  return isNaN(d) ? "time out of range" : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
}
async function loadStats() {
  try {
    const s = await getJSON("/v1/stats");
    document.getElementById("stats").textContent =
      `${s.documents.toLocaleString()} articles · ${s.clusters.toLocaleString()} stories with copies · ${s.duplicates.toLocaleString()} copies`;
  } catch (e) { /* stats are optional */ }
}
async function loadCards() {
  const box = document.getElementById("cards");
  const cards = await getJSON("/v1/clusters?limit=48");
  if (!cards.length) { box.innerHTML = '<p class="empty">No story has copies yet.</p>'; return; }
  box.innerHTML = "";
  for (const c of cards) {
    const el = document.createElement("div");
    el.className = "card"; el.tabIndex = 0; el.dataset.cluster = c.cluster;
    el.innerHTML = `<span class="size" title="articles">${c.size}</span>
      <div class="meta">story ${c.cluster} · keeper <b>${esc(c.keeper)}</b>${c.keeper_source ? " (" + esc(c.keeper_source) + ")" : ""}</div>
      <div class="snippet">${esc(c.snippet || "")}…</div>`;
    el.addEventListener("click", () => openCluster(c.cluster));
    el.addEventListener("keydown", ev => { if (ev.key === "Enter") openCluster(c.cluster); });
    box.appendChild(el);
  }
}
function showDetail(html) {
  const det = document.getElementById("detail");
  det.innerHTML = `<button id="back">← all stories</button>` + html;
  det.hidden = false;
  document.getElementById("list").hidden = true;
  document.getElementById("back").addEventListener("click", () => { det.hidden = true; document.getElementById("list").hidden = false; });
}
async function openCluster(id) {
  const r = await fetch(`/v1/clusters/${id}?texts=true`);
  if (!r.ok) {  // removed since the list was loaded (404), or the service failed
    const why = r.status === 404 ? "its articles have been removed since this list was loaded" : `the service answered ${r.status}`;
    showDetail(`<p class="empty">Story ${esc(id)} cannot be shown: ${why}.</p>`);
    return;
  }
  const d = await r.json();
  if (d.merged_into != null) return openCluster(d.merged_into);  // merged into another story since
  const keeper = d.members.find(m => m.is_keeper) || d.members[0];
  const kg = grams(tokens(keeper.text || ""));
  const all = new Set();
  for (const m of d.members) if (!m.is_keeper) for (const g of grams(tokens(m.text || ""))) all.add(g);
  let html = `<h2>Story ${d.cluster}: ${d.size} articles, keeper ${esc(d.keeper)}</h2><div class="members">`;
  for (const m of d.members) {
    const body = m.text == null ? '<span class="empty">(text not stored)</span>' : highlight(m.text, m.is_keeper ? all : kg);
    html += `<article class="member${m.is_keeper ? " keeper" : ""}" data-id="${esc(m.id)}">
      <h3>${esc(m.id)} ${m.is_keeper ? '<span class="badge">keeper</span>' : '<span class="badge alt">alternate</span>'}</h3>
      <div class="meta">${esc(m.source || "unknown source")} · ${when(m.published_at)}${m.is_keeper ? "" : ` · ${m.match} J=${m.similarity.toFixed(3)}`}</div>
      <div class="text">${body}</div></article>`;
  }
  showDetail(html + "</div>");
}
loadStats();
loadCards().catch(e => { document.getElementById("cards").innerHTML = '<p class="empty">Cannot load stories: ' + esc(e.message) + "</p>"; });
</script>
</body>
</html>
"""
