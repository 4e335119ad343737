// The review page's diffs: a file's hunks, unified or side by side (old | new) on a wide
// enough window, the choice remembered in localStorage. It uses app.js's `el` and `ui` (the
// scripts share one global scope) only when called, after every script has loaded.
"use strict";

const LAYOUT_KEY = "filewatchd.diffLayout";
const narrowWindow = window.matchMedia("(max-width: 700px)");

function chosenLayout() {
  try { return localStorage.getItem(LAYOUT_KEY) === "split" ? "split" : "unified"; } catch (_) { return "unified"; }
}

function layoutToggle() {
  const pick = (layout) => () => {
    try { localStorage.setItem(LAYOUT_KEY, layout); } catch (_) { /* private mode: not remembered */ }
    document.querySelectorAll("button.layout").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.layout === layout)));
    redrawDiff();
  };
  const button = (layout, text) => el("button", { class: "layout", "data-layout": layout, "aria-pressed": String(chosenLayout() === layout), onclick: pick(layout), text });
  return el("div", { class: "actions layouts", role: "group", "aria-label": "Diff layout" },
    button("unified", "Unified"), button("split", "Side by side"));
}

function redrawDiff() {
  const old = document.querySelector("#file .diff, #file > .note");
  if (old && ui.shownDiff) old.replaceWith(diffView(ui.shownDiff.change, ui.shownDiff.revert));
}

narrowWindow.addEventListener("change", redrawDiff);

function diffView(change, revert) {
  if (change.binary) return el("p", { class: "note", text: "Binary file: no diff." });
  if (change.too_large) return el("p", { class: "note", text: "Too large: only its size and hash were recorded." });
  if (change.unreadable) return el("p", { class: "note", text: "Unreadable: its content was never recorded." });
  if (!change.diff) return el("p", { class: "note", text: change.kind === "file" ? "No text changes." : `A ${change.kind}: no diff.` });
  const hunks = [];
  let current = null;
  for (const line of change.diff.split("\n")) {
    if (line.startsWith("@@")) { current = []; hunks.push(current); }
    if (current) current.push(line);
  }
  const split = chosenLayout() === "split" && !narrowWindow.matches;
  return el("div", { class: split ? "diff split" : "diff" }, ...hunks.map((lines, i) => el("div", { class: "hunk" },
    el("div", { class: "hunk-head" }, el("code", { text: lines[0] }),
      el("button", { text: "Revert hunk", "aria-label": "Revert hunk", onclick: () => revert(i) })),
    split ? splitHunk(lines.slice(1)) : unifiedHunk(lines.slice(1)))));
}

function unifiedHunk(lines) {
  return el("pre", {}, ...lines.map((l) => el("span", { class: l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "ctx", text: l + "\n" })));
}

/** One hunk as rows of (old | new): context on both sides, each run of removed lines beside the added lines after it. */
function splitRows(lines) {
  const rows = [];
  let removed = [];
  let added = [];
  const flush = () => {
    for (let k = 0; k < Math.max(removed.length, added.length); k++) rows.push([removed[k] ?? null, added[k] ?? null, "change"]);
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.startsWith("-")) { if (added.length) flush(); removed.push(line.slice(1)); continue; }
    if (line.startsWith("+")) { added.push(line.slice(1)); continue; }
    if (line === "" || line.startsWith("\\")) continue; // the diff's last newline; "\ No newline at end of file"
    flush();
    rows.push([line.slice(1), line.slice(1), "ctx"]);
  }
  flush();
  return rows;
}

function splitHunk(lines) {
  const cell = (text, side, kind) => el("td", { class: text == null ? `${side} empty` : kind === "ctx" ? `${side} ctx` : `${side} ${side === "old" ? "del" : "add"}` },
    el("code", { text: text ?? "" }));
  return el("table", { class: "split-hunk" }, ...splitRows(lines).map(([left, right, kind]) => el("tr", {}, cell(left, "old", kind), cell(right, "new", kind))));
}

