"""The web page at ``/``: recent stories as cards; a card opens to its members side by side,
the keeper marked and the passages each member shares with the keeper highlighted: runs of k
tokens in common, with the index's own k and unit (``/v1/stats``) and its normalisation (NFKC
and lower-case for words and characters, lower-case for whitespace tokens, of the whole text
before it is split, and the core's word characters and Python's white space), so that the
passages are the shingles the index compared. Every string of an article is shown as text, and
those inline among the page's own words are isolated (``<bdi>``) from its direction; an id's or a
source's bidi controls (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C) are shown as
``\u202e``-style marks and obey nothing, so an id reads in the order of its code points (its text
in the page is still the id itself, for copying); its invisible characters (U+200B..U+200D,
U+2060..U+2064, U+FEFF, U+00AD and the fillers; not a joiner inside an emoji sequence) are shown
so too, so that two ids that differ by one are told apart. A card's snippet (the keeper's first
``SNIPPET_CUT`` code points, cut by the service) ends on a grapheme boundary (Intl.Segmenter): a
flag, an accented letter or an emoji sequence is shown whole or not at all. Integer ids past 2^53
are read as their digits (JSON.parse's source text), not rounded as JavaScript numbers would be."""

# the code points of a card's snippet (service/views/clusters.py: the keeper's title and text cut to this many)
SNIPPET_CUT = 240

_PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>neardup: stories and their copies</title>
<link rel="icon" href="data:,">
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #222; }
  header { padding: 14px 22px; background: #1f3a5f; color: #fff; display: flex; gap: 18px; align-items: baseline; }
  header h1 { font-size: 19px; margin: 0; }
  header .stats { opacity: .85; font-size: 13px; }
  main { padding: 18px 22px; }
  #cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(280px, 1fr)); gap: 14px; }
  .card { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 12px 14px; cursor: pointer; }
  .card:hover, .card:focus { border-color: #1f3a5f; outline: none; box-shadow: 0 1px 6px rgba(0,0,0,.12); }
  .card .meta, .card .snippet { overflow-wrap: anywhere; }
  .card .meta { font-size: 12px; color: #666; margin-bottom: 6px; }
  .card .size { float: right; background: #1f3a5f; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 12px; }
  #detail { margin-top: 22px; }
  #detail h2 { font-size: 17px; overflow-wrap: anywhere; }
  .members { display: flex; gap: 12px; overflow-x: auto; align-items: flex-start; }
  .member { flex: 0 0 360px; background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 10px 12px; }
  .member.keeper { border: 2px solid #2e7d32; }
  .member h3 { font-size: 14px; margin: 0 0 4px; word-break: break-all; }
  .badge { display: inline-block; font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #2e7d32; color: #fff; }
  .badge.alt { background: #777; }
  .member .meta { font-size: 12px; color: #666; margin-bottom: 6px; overflow-wrap: anywhere; }
  .member .title { font-weight: 600; margin-bottom: 4px; overflow-wrap: anywhere; }
  .member .text { white-space: pre-wrap; font-size: 13.5px; overflow-wrap: anywhere; }
  mark { background: #ffe58a; padding: 0; }
  /* a bidi control in an id or source: the character stays (copying the id copies it), isolated in
     its own box so that it acts on nothing, and shown as its escape */
  .ctl { unicode-bidi: isolate; direction: ltr; font: 11px/1 ui-monospace, monospace; color: #a00;
         background: #fde8e8; border: 1px solid #e0a0a0; border-radius: 3px; padding: 0 2px; margin: 0 1px; }
  .ctl::before { content: attr(data-cp); }
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
// the index's shingles: k tokens of its unit (read from /v1/stats before a story is opened)
const SHINGLE = {k: 5, unit: "word"};
// Rust's regex `\w` (UTS #18: the index's word characters) and Python's white space (str.isspace:
// Unicode White_Space and U+001C..U+001F; not U+FEFF, which JavaScript's \s holds)
const WORD = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+/gu;
const SPACE = /^[\p{White_Space}\x1c-\x1f]$/u;
const NOT_SPACE = /[^\p{White_Space}\x1c-\x1f]+/gu;
// Pieces of text that NFKC never joins to their neighbours: a run of ASCII, or one character with
// the combining marks, Hangul jamo and half-width sound marks it may compose with after it; and
// chunks (for speed) that end where a piece does: at ASCII white space or at the end of a run of ASCII
const JOINS = "\\p{M}\\u1160-\\u11ff\\u3131-\\u318e\\uff9e\\uff9f\\uffa0-\\uffdc";
const PIECE = new RegExp(`[\\x00-\\x7f]+(?![${JOINS}])|[\\s\\S][${JOINS}]*`, "gu");
const CHUNK = new RegExp(`[\\x00-\\x7f]+(?![${JOINS}])|[\\s\\S][^\\t\\n\\r ]*`, "gu");
function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
// An id or source inline among the page's own words: escaped and isolated (<bdi>), so that its
// direction (an Arabic or Hebrew name) stays inside it; and its bidi controls (the Bidi_Control
// characters: embeddings, overrides, isolates, LRM, RLM, ALM) each in a box of its own, where
// they act on nothing, shown as their escape ("\u202e") with their name on hover. Without that,
// "\u202eexe.txt" read "txt.exe": an id must read in the order of its code points, and a
// person comparing two ids must see the invisible character that tells them apart.
// Likewise the invisible characters (zero-width space, joiners, word joiner, BOM, soft hyphen,
// fillers...): "ab\u200bcd" and "abcd" are two ids that looked the same. A zero-width joiner
// right after an emoji (and its skin tone or presentation selector) is part of an emoji
// sequence ("👩‍👩‍👧") and is left as it is.
const MARKED = /\p{Bidi_Control}|(?<!\p{Extended_Pictographic}[\u{FE0F}\u{1F3FB}-\u{1F3FF}]?)\u200d|[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u2060-\u2064\u3164\ufeff\uffa0]/gu;
const MARK_NAMES = {0xad: "SOFT HYPHEN", 0x34f: "COMBINING GRAPHEME JOINER", 0x115f: "HANGUL CHOSEONG FILLER",
  0x1160: "HANGUL JUNGSEONG FILLER", 0x17b4: "KHMER VOWEL INHERENT AQ", 0x17b5: "KHMER VOWEL INHERENT AA",
  0x180e: "MONGOLIAN VOWEL SEPARATOR", 0x200b: "ZERO WIDTH SPACE", 0x200c: "ZERO WIDTH NON-JOINER",
  0x200d: "ZERO WIDTH JOINER", 0x2060: "WORD JOINER", 0x2061: "FUNCTION APPLICATION", 0x2062: "INVISIBLE TIMES",
  0x2063: "INVISIBLE SEPARATOR", 0x2064: "INVISIBLE PLUS", 0x3164: "HANGUL FILLER",
  0xfeff: "ZERO WIDTH NO-BREAK SPACE", 0xffa0: "HALFWIDTH HANGUL FILLER",
  0x61c: "ARABIC LETTER MARK", 0x200e: "LEFT-TO-RIGHT MARK", 0x200f: "RIGHT-TO-LEFT MARK",
  0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
  0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE", 0x2066: "LEFT-TO-RIGHT ISOLATE",
  0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE"};
function bdi(s) {
  return "<bdi>" + esc(s).replace(MARKED, c => {
    const n = c.codePointAt(0), hex = n.toString(16).padStart(4, "0");
    return `<span class="ctl" data-cp="\\u${hex}" title="U+${hex.toUpperCase()} ${MARK_NAMES[n] || ""}">${c}</span>`;
  }) + "</bdi>";
}
// A card's snippet: the service cuts the keeper's title and text at @SNIPPET_CUT@ code points, which
// can fall inside a grapheme cluster (a flag's two regional indicators, a letter and its combining
// accent, an emoji ZWJ sequence). A snippet that long may have been cut, so its last cluster (maybe
// a piece of one) is left out: what is shown ends on a cluster boundary of the text.
const SNIPPET_CUT = @SNIPPET_CUT@;
const GRAPHEMES = typeof Intl === "object" && Intl.Segmenter ? new Intl.Segmenter(undefined, {granularity: "grapheme"}) : null;
function snippet(s) {
  if (!s) return "";
  let n = 0;
  for (const _ of s) if (++n >= SNIPPET_CUT) break;  // code points, as the service counts them
  if (n < SNIPPET_CUT) return esc(s);  // the whole text
  let last = s.length;
  if (GRAPHEMES) for (const g of GRAPHEMES.segment(s)) last = g.index;
  return esc(s.slice(0, last)) + "…";
}
// The text as the index reads it before splitting it: NFKC (not for whitespace tokens), then
// lower-case, both of the whole text (final sigma; an accent after its letter, "e\u0301", is one
// character "é"; "´" is a space and a combining accent, which joins the next word), with, for each
// UTF-16 unit of the result, the span of the original text it came from (s[i], e[i]).
function normalized(text, nfkc) {
  const parts = [], s = [], e = [];
  const norm = p => nfkc ? p.normalize("NFKC") : p;
  const same = (p, a) => {  // what normalisation leaves as it is (lower-casing aside): one unit each
    parts.push(p);
    for (let i = 0; i < p.length; i++) { s.push(a + i); e.push(a + i + 1); }
  };
  for (const c of text.matchAll(CHUNK)) {
    if (norm(c[0]) === c[0] && c[0].toLowerCase().length === c[0].length) { same(c[0], c.index); continue; }
    for (const m of c[0].matchAll(PIECE)) {
      const p = m[0], a = c.index + m.index, n = norm(p);
      if (n === p && p.toLowerCase().length === p.length) { same(p, a); continue; }
      parts.push(n);  // all of it from all of the piece
      for (let i = n.toLowerCase().length; i > 0; i--) { s.push(a); e.push(a + p.length); }
    }
  }
  const whole = parts.join("").toLowerCase();  // (lower-casing changes no length by context)
  return {t: whole.length === s.length ? whole : parts.map(p => p.toLowerCase()).join(""), s, e};
}
// Tokens as the index makes them, each with the span of the original text it came from: words
// (runs of `\w` in the normalised text; a word NFKC splits in two is two tokens of one span),
// whitespace-separated tokens (lower-case) or characters (each run of white space one space,
// none at the ends).
function tokens(text) {
  const out = [];
  const {t, s, e} = normalized(text, SHINGLE.unit !== "whitespace");
  if (SHINGLE.unit === "char") {
    let gap = null;  // the run of white space before the next character, once one was seen
    for (let i = 0; i < t.length;) {
      const n = t.codePointAt(i) > 0xffff ? 2 : 1, c = t.slice(i, i + n);
      if (SPACE.test(c)) {
        if (out.length) gap = gap ? {s: gap.s, e: e[i + n - 1]} : {s: s[i], e: e[i + n - 1]};
      } else {
        if (gap) { out.push({w: " ", s: gap.s, e: gap.e}); gap = null; }
        out.push({w: c, s: s[i], e: e[i + n - 1]});
      }
      i += n;
    }
  } else {
    for (const m of t.matchAll(SHINGLE.unit === "whitespace" ? NOT_SPACE : WORD)) {
      out.push({w: m[0], s: s[m.index], e: e[m.index + m[0].length - 1]});
    }
  }
  return out;
}
function gramAt(toks, i) { return toks.slice(i, i + SHINGLE.k).map(t => t.w).join("\u0001"); }
function grams(toks) {
  const g = new Set();
  for (let i = 0; i + SHINGLE.k <= toks.length; i++) g.add(gramAt(toks, i));
  return g;
}
// Highlight the spans of `text` covered by a shingle that also occurs in `otherGrams`.
function highlight(text, otherGrams) {
  const toks = tokens(text);
  const mark = new Array(toks.length).fill(false);
  for (let i = 0; i + SHINGLE.k <= toks.length; i++) {
    if (otherGrams.has(gramAt(toks, i))) for (let j = i; j < i + SHINGLE.k; j++) mark[j] = true;
  }
  let html = "", pos = 0, i = 0;
  while (i < toks.length) {
    if (!mark[i] || toks[i].s < pos) { i++; continue; }
    let j = i;
    while (j + 1 < toks.length && mark[j + 1]) j++;
    html += esc(text.slice(pos, toks[i].s)) + '<mark class="shared">' + esc(text.slice(toks[i].s, toks[j].e)) + "</mark>";
    pos = toks[j].e; i = j + 1;
  }
  return html + esc(text.slice(pos));
}
// JSON with integers past 2^53 kept as their digits (a JavaScript number would round them)
function parseJSON(body) {
  return JSON.parse(body, (key, value, ctx) =>
    typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) && ctx && ctx.source
      ? ctx.source : value);
}
function when(t) {
  if (t == null) return "no time";
  const d = new Date(t * 1000);  // (an index made before times were checked may hold one past year 9999)
  return isNaN(d) ? "time out of range" : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}
async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ": " + r.status);
  return parseJSON(await r.text());
}
async function loadStats() {
  try {
    const s = await getJSON("/v1/stats");
    if (s.config) { SHINGLE.k = s.config.k; SHINGLE.unit = s.config.unit; }
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
    el.setAttribute("role", "button");
    el.innerHTML = `<span class="size" title="articles">${c.size}</span>
      <div class="meta">story ${c.cluster} · keeper <b>${bdi(c.keeper)}</b>${c.keeper_source ? " (" + bdi(c.keeper_source) + ")" : ""}</div>
      <div class="snippet" dir="auto">${snippet(c.snippet)}</div>`;
    el.addEventListener("click", () => openCluster(c.cluster, true));
    el.addEventListener("keydown", ev => {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openCluster(c.cluster, true); }
    });
    box.appendChild(el);
  }
}
let lastCard = null;  // the card a story was opened from: focus goes back to it
function showDetail(html) {
  const det = document.getElementById("detail");
  det.innerHTML = `<button id="back">← all stories</button>` + html;
  det.hidden = false;
  document.getElementById("list").hidden = true;
  document.getElementById("back").addEventListener("click", () => history.state && history.state.cluster != null
    ? history.back() : showList());
  const h = det.querySelector("h2, p");
  if (h) { h.tabIndex = -1; h.focus(); }
}
// The list, reloaded (stories added or removed since it was shown), focus back on the card
async function showList() {
  document.getElementById("detail").hidden = true;
  document.getElementById("list").hidden = false;
  const from = lastCard;
  await Promise.all([loadStats(), loadCards().catch(showLoadError)]);
  const card = from == null ? null : document.querySelector(`.card[data-cluster="${from}"]`);
  if (card) card.focus();
}
function showLoadError(e) {
  document.getElementById("cards").innerHTML = '<p class="empty">Cannot load stories: ' + esc(e.message) + "</p>";
}
// the browser's Back and Forward move between the list and the stories opened
window.addEventListener("popstate", ev => {
  if (ev.state && ev.state.cluster != null) openCluster(ev.state.cluster, false); else showList();
});
async function openCluster(id, push) {
  lastCard = id;
  if (push) history.pushState({cluster: id}, "", `#story-${id}`);
  await statsRead;
  const r = await fetch(`/v1/clusters/${id}?texts=true`);
  if (!r.ok) {  // removed since the list was loaded (404), or the service failed
    const why = r.status === 404 ? "its articles have been removed since this list was loaded" : `the service answered ${r.status}`;
    showDetail(`<p class="empty">Story ${esc(id)} cannot be shown: ${why}.</p>`);
    return;
  }
  const d = parseJSON(await r.text());
  if (d.merged_into != null) return openCluster(d.merged_into, false);  // merged into another story since
  const keeper = d.members.find(m => m.is_keeper) || d.members[0];
  const kg = grams(tokens(keeper.text || ""));
  const all = new Set();
  for (const m of d.members) if (!m.is_keeper) for (const g of grams(tokens(m.text || ""))) all.add(g);
  let html = `<h2>Story ${d.cluster}: ${d.size} articles, keeper ${bdi(d.keeper)}</h2><div class="members">`;
  for (const m of d.members) {
    const body = m.text == null ? '<span class="empty">(text not stored)</span>' : highlight(m.text, m.is_keeper ? all : kg);
    html += `<article class="member${m.is_keeper ? " keeper" : ""}" data-id="${esc(m.id)}">
      <h3>${bdi(m.id)} ${m.is_keeper ? '<span class="badge">keeper</span>' : '<span class="badge alt">alternate</span>'}</h3>
      <div class="meta">${m.source ? bdi(m.source) : "unknown source"} · ${when(m.published_at)}${m.is_keeper ? "" :
        ` · ${esc(m.match ?? "")}${m.similarity == null ? "" : ` J=${m.similarity.toFixed(3)}`}`}</div>
      ${m.fields && typeof m.fields.title === "string" ? `<div class="title" dir="auto">${esc(m.fields.title)}</div>` : ""}
      <div class="text" dir="auto">${body}</div></article>`;
  }
  showDetail(html + "</div>");
}
// the stats (and with them the index's k and unit) before any story opens
const statsRead = loadStats();
const opening = /^#story-(\d+)$/.exec(location.hash);
if (opening) openCluster(Number(opening[1]), false);
loadCards().catch(showLoadError);
</script>
</body>
</html>
"""
PAGE = _PAGE.replace("@SNIPPET_CUT@", str(SNIPPET_CUT))
