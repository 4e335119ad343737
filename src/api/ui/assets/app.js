// The review page of filewatchd (issue 18): the timeline, a turn, a file, and the actions, all
// through the daemon's HTTP API with the page's cookie and CSRF token. No framework; text is
// always set with textContent (nothing from the API is ever parsed as HTML).
"use strict";

// The CSRF token comes once, in the login redirect's fragment (never sent to a server), and is
// kept in this origin's sessionStorage: every API call sends it, reads included.
const csrf = (() => {
  const given = new URLSearchParams(location.hash.slice(1)).get("t");
  if (given) {
    sessionStorage.setItem("filewatchd-csrf", given);
    history.replaceState(null, "", location.pathname);
  }
  return sessionStorage.getItem("filewatchd-csrf") ?? "";
})();
const ui = { entries: [], next: null, turnIndex: -1, turn: null, diffs: null, fileIndex: -1, session: null, shown: 0 };
// A turn's files are shown a page at a time, so a turn of thousands of files stays usable.
const FILE_PAGE = 200;

async function api(method, path, body) {
  const options = { method, headers: {}, credentials: "same-origin" };
  options.headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const reply = await fetch(path, options);
  let data = null;
  try { data = await reply.json(); } catch (_) { data = null; }
  return { status: reply.status, ok: reply.ok, data };
}

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function errorText(reply) {
  const error = reply.data && reply.data.error;
  return error ? `${error.message} (${error.code})` : `the daemon answered ${reply.status}`;
}

function when(time) {
  return time ? new Date(time).toLocaleString() : "";
}

function duration(from, to) {
  if (!from || !to) return "";
  const s = Math.round((new Date(to) - new Date(from)) / 1000);
  return s < 60 ? ` · ${s} s` : s < 3600 ? ` · ${Math.round(s / 60)} min` : ` · ${(s / 3600).toFixed(1)} h`;
}

function counts(c) {
  if (!c) return "";
  const parts = [];
  if (c.added) parts.push(`+${c.added} added`);
  if (c.modified) parts.push(`~${c.modified} modified`);
  if (c.deleted) parts.push(`-${c.deleted} deleted`);
  if (c.renamed) parts.push(`${c.renamed} renamed`);
  return parts.join(", ") || "no changes";
}

/** Replaces a node's children, leaving out the nulls of optional parts. */
function fill(node, ...children) {
  node.replaceChildren(...children.filter((c) => c != null));
}

const seg = (s) => encodeURIComponent(s);
const sessionPath = (s) => `/v1/sessions/${seg(s)}`;

// ---- the timeline ----

async function loadTimeline(more) {
  const unreviewed = document.getElementById("unreviewed").checked;
  let query = "limit=50";
  if (unreviewed) query += "&unreviewed=true";
  if (ui.session) query += `&session=${seg(ui.session)}`;
  if (more && ui.next) query += `&before=${seg(ui.next)}`;
  const reply = await api("GET", `/v1/timeline?${query}`);
  const list = document.getElementById("timeline");
  if (!reply.ok) {
    fill(list, el("p", { class: "error", role: "alert", text: errorText(reply) }));
    return;
  }
  if (!more) ui.entries = [];
  ui.entries.push(...reply.data.entries);
  ui.next = reply.data.next_before;
  renderTimeline();
}

function renderTimeline() {
  const list = document.getElementById("timeline");
  const items = ui.entries.map((entry, index) => el("li", {}, entryView(entry, index)));
  const nodes = [el("h2", { text: "Timeline" })];
  nodes.push(items.length ? el("ol", { class: "entries" }, ...items) : el("p", { text: "Nothing recorded yet." }));
  if (ui.next) nodes.push(el("button", { text: "Older", onclick: () => loadTimeline(true) }));
  fill(list, ...nodes);
}

/** Who wrote a run of versions outside any turn. */
const OUTSIDE_WHO = { outside: "you / an editor", found: "found at start-up" };

function entryView(entry, index) {
  if (OUTSIDE_WHO[entry.kind]) {
    const noun = entry.paths === 1 ? "path" : "paths";
    return el("div", { class: `entry other outside ${entry.kind}`, "data-kind": entry.kind },
      el("span", { class: "what", text: `Outside any turn (${OUTSIDE_WHO[entry.kind]}): ${entry.paths} ${noun}` }),
      el("span", { class: "meta", text: `${when(entry.time)} · ${counts(entry.counts)}` }));
  }
  if (entry.kind !== "turn") {
    const target = entry.target ? ` → ${entry.target.to} turn ${entry.target.turn ?? ""}` : "";
    return el("div", { class: "entry other" },
      el("span", { class: "what", text: `${entry.kind}${target}` }),
      el("span", { class: "meta", text: `${entry.session || "workspace"} · ${when(entry.time)}` }));
  }
  const marks = [];
  if (entry.open) marks.push(el("span", { class: "mark open", text: "open" }));
  if (entry.undone) marks.push(el("span", { class: "mark undone", text: "undone" }));
  if (entry.reviewed) marks.push(el("span", { class: "mark reviewed", text: "reviewed" }));
  const selected = ui.turn && ui.turn.session === entry.session && ui.turn.turn === entry.turn;
  return el("button", {
    class: "entry turn" + (selected ? " selected" : ""),
    "data-turn": `${entry.session}/${entry.turn}`,
    onclick: () => openTurn(index),
  },
    el("span", { class: "what", text: `#${entry.turn} ${entry.prompt || entry.label || "(no prompt)"}` }),
    el("span", { class: "meta", text: `${entry.session} · ${when(entry.time)}${duration(entry.started_at, entry.ended_at)} · ${counts(entry.counts)}` }),
    ...marks);
}

function turnIndexes() {
  return ui.entries.map((e, i) => (e.kind === "turn" ? i : -1)).filter((i) => i >= 0);
}

async function loadSessions() {
  const reply = await api("GET", "/v1/sessions");
  const box = document.getElementById("sessions");
  if (!reply.ok) return fill(box, el("p", { class: "error", text: errorText(reply) }));
  const pick = (name) => () => { ui.session = ui.session === name ? null : name; loadSessions(); loadTimeline(false); };
  fill(box, el("h2", { text: "Sessions" }), el("ul", { class: "sessions" }, ...reply.data.sessions.map((s) => el("li", {},
    el("button", { class: "session" + (ui.session === s.session ? " selected" : ""), "data-session": s.session, "aria-pressed": String(ui.session === s.session), onclick: pick(s.session) },
      el("span", { class: "what", text: `${s.session}${s.agent ? ` (${s.agent})` : ""}: ${s.first_prompt || "no prompt"}` }),
      el("span", { class: "meta", text: `${s.turns} turns · last ${when(s.last_activity)}${s.parent ? ` · fork of ${s.parent} after turn ${s.fork_turn}` : ""}` }))))));
}

// ---- a turn ----

async function openTurn(index) {
  const entry = ui.entries[index];
  ui.turnIndex = index;
  ui.diffs = null;
  ui.fileIndex = -1;
  ui.shown = FILE_PAGE;
  const reply = await api("GET", `${sessionPath(entry.session)}/turns/${entry.turn}`);
  const detail = document.getElementById("detail");
  if (!reply.ok) {
    fill(detail, el("p", { class: "error", role: "alert", text: errorText(reply) }));
    return;
  }
  ui.turn = reply.data;
  renderTimeline();
  renderTurn(entry);
}

function latestUndoable(session) {
  return ui.entries.find((e) => e.kind === "turn" && e.session === session && !e.undone && !e.open);
}

function renderTurn(entry) {
  const t = ui.turn;
  const base = sessionPath(t.session);
  const actions = el("div", { class: "actions" });
  const latest = latestUndoable(t.session);
  if (latest && latest.turn === t.turn) {
    actions.append(el("button", { text: "Undo turn", onclick: () => act("Undo turn", `${base}/undo`, {}) }));
  }
  actions.append(
    el("button", { text: "Roll back to here", onclick: () => act(`Roll back to the end of turn ${t.turn}`, `${base}/rollback`, { to: "after", turn: t.turn }) }),
    el("button", { text: "Roll back to before", onclick: () => act(`Roll back to the start of turn ${t.turn}`, `${base}/rollback`, { to: "before", turn: t.turn }) }),
    el("button", { text: "Redo", onclick: () => act("Redo", `${base}/redo`, {}) }),
    el("button", { text: t.reviewed ? "Mark not reviewed" : "Mark reviewed", onclick: () => review(!t.reviewed) }));
  fill(document.getElementById("detail"),
    el("h2", { text: `Turn ${t.turn} of ${t.session}` }),
    el("p", { class: "prompt", text: t.label || "(no prompt)" }),
    el("p", { class: "meta", text: `${when(t.started_at)} – ${when(t.ended_at)} · ${counts(t.counts)}${entry.undone ? " · undone" : ""}${t.reviewed ? " · reviewed" : ""}` }),
    actions,
    layoutToggle(),
    el("div", { id: "message", role: "status" }),
    el("ol", { class: "files", "aria-label": "Files" }, ...fileItems(0, Math.min(ui.shown, t.changes.length))),
    moreFilesButton(),
    el("div", { id: "file" }));
}

function fileItems(from, to) {
  return ui.turn.changes.slice(from, to).map((change, k) => el("li", {}, el("button", {
    class: "file", "data-path": change.path, onclick: () => openFile(from + k),
  }, el("span", { class: `change ${change.change}`, text: change.change }),
    el("span", { class: "path", text: change.from ? `${change.from} → ${change.path}` : change.path }),
    el("span", { class: "meta", text: fileMarks(change) }))));
}

/** "Show 200 more" under a turn's files while some are not shown yet; null when all are. */
function moreFilesButton() {
  const left = ui.turn.changes.length - ui.shown;
  if (left <= 0) return null;
  return el("button", { class: "more-files", text: `Show ${Math.min(left, FILE_PAGE)} more (${left} not shown)`, onclick: showMoreFiles });
}

function showMoreFiles(event) {
  const from = ui.shown;
  ui.shown = Math.min(from + FILE_PAGE, ui.turn.changes.length);
  document.querySelector("ol.files").append(...fileItems(from, ui.shown));
  const more = moreFilesButton();
  if (more) event.currentTarget.replaceWith(more);
  else event.currentTarget.remove();
}

function fileMarks(change) {
  const marks = [change.kind];
  if (change.too_large) marks.push("too large");
  if (change.unreadable) marks.push("unreadable");
  if (change.ambiguous) marks.push("ambiguous");
  if (change.mode_changed) marks.push("mode changed");
  if (change.reviewed) marks.push("reviewed");
  return marks.join(" · ");
}

function say(text, isError) {
  const box = document.getElementById("message");
  if (box) {
    box.className = isError ? "error" : "ok";
    box.textContent = text;
  }
}

async function review(reviewed, path) {
  const t = ui.turn;
  const body = path === undefined ? { reviewed } : { reviewed, path };
  const reply = await api("PUT", `${sessionPath(t.session)}/turns/${t.turn}/review`, body);
  if (!reply.ok) return say(`Cannot mark ${path ?? "the turn"}: ${errorText(reply)}`, true);
  await refresh();
  say(`${path ?? "The turn"}: marked ${reviewed ? "reviewed" : "not reviewed"}.`);
}

// ---- a file ----

async function openFile(index) {
  const t = ui.turn;
  const change = t.changes[index];
  ui.fileIndex = index;
  document.querySelectorAll("button.file").forEach((b, i) => b.classList.toggle("selected", i === index));
  if (!ui.diffs) {
    const reply = await api("GET", `${sessionPath(t.session)}/turns/${t.turn}?diff=true`);
    ui.diffs = reply.ok ? reply.data.changes : [];
  }
  const withDiff = ui.diffs.find((c) => c.path === change.path) || change;
  const box = document.getElementById("file");
  const revert = (hunk) => {
    const body = { path: change.path };
    if (hunk !== undefined) body.hunk = hunk;
    const what = hunk === undefined ? `Revert ${change.path}` : `Revert hunk ${hunk + 1} of ${change.path}`;
    act(what, `${sessionPath(t.session)}/turns/${t.turn}/revert`, body);
  };
  fill(box,
    el("h3", { text: change.path }),
    el("div", { class: "actions" }, el("button", { text: "Revert file", onclick: () => revert() }),
      el("button", { text: change.reviewed ? "Mark file not reviewed" : "Mark file reviewed", onclick: () => review(!change.reviewed, change.path) })),
    diffView(withDiff, revert),
    el("h4", { text: "Versions" }), el("div", { id: "versions", text: "Loading…" }),
    el("h4", { text: "Blame" }), el("div", { id: "blame", text: "Loading…" }));
  ui.shownDiff = { change: withDiff, revert };
  loadVersions(change.path);
  loadBlame(change.path);
}

// ---- the diff's layout: unified, or side by side (old | new) on a wide enough window ----

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

async function loadVersions(path) {
  const reply = await api("GET", `/v1/history?path=${seg(path)}`);
  const box = document.getElementById("versions");
  if (!box) return;
  if (!reply.ok) return fill(box, el("p", { class: "error", text: errorText(reply) }));
  fill(box, el("ol", { class: "versions" }, ...reply.data.versions.map((v) => el("li", {
    text: `#${v.seq} · ${when(v.time)} · ${v.origin}${v.session ? ` ${v.session}/${v.turn}` : ""} · ${v.kind}${v.size != null ? ` · ${v.size} B` : ""}`,
  }))));
}

async function loadBlame(path) {
  const reply = await api("GET", `/v1/blame?path=${seg(path)}`);
  const box = document.getElementById("blame");
  if (!box) return;
  if (!reply.ok) {
    const error = reply.data && reply.data.error;
    const noEndpoint = reply.status === 404 && (!error || /endpoint/.test(error.message));
    const text = noEndpoint ? "Blame is not available from this daemon (GET /v1/blame answered 404)." : `No blame: ${errorText(reply)}`;
    return fill(box, el("p", { class: "note blame-missing", text }));
  }
  const b = reply.data;
  if (b.binary || b.too_large) return fill(box, el("p", { class: "note", text: b.binary ? "Binary file: no blame." : "Too large: no blame." }));
  fill(box, el("table", { class: "blame" }, ...b.lines.map((l) => el("tr", {},
    el("td", { class: "meta", text: `#${l.seq}` }),
    el("td", { class: "meta", text: l.turn != null ? `${l.session}/${l.turn}` : l.origin }),
    el("td", { class: "meta", text: (l.prompt || "").slice(0, 30) }),
    el("td", {}, el("code", { text: l.text }))))));
}

// ---- actions: the plan first, then apply ----

async function act(title, url, body) {
  const dialog = document.getElementById("plan");
  const withDiffs = url.endsWith("/revert") ? {} : { diff: true };
  const plan = await api("POST", url, { ...body, ...withDiffs, dry_run: true, on_conflict: "abort" });
  if (!plan.ok) {
    fill(dialog, el("h2", { text: title }), el("p", { class: "error", role: "alert", text: errorText(plan) }),
      el("button", { text: "Close", onclick: () => dialog.close() }));
    return dialog.showModal();
  }
  const apply = async (onConflict) => {
    const done = await api("POST", url, { ...body, on_conflict: onConflict });
    dialog.close();
    await refresh();
    if (done.ok) say(`${title}: done (${done.data.actions.length} changed, ${done.data.skipped.length} skipped).`);
    else say(`${title}: ${errorText(done)}`, true);
  };
  const p = plan.data;
  const conflicted = p.conflicts.length > 0;
  fill(dialog,
    el("h2", { text: `${title}: the plan` }),
    p.actions.length ? planActions(p.actions) : el("p", { text: "Nothing to change." }),
    planList("Conflicts", p.conflicts.map((c) => `${c.path}: ${c.code} — ${c.reason}`), "conflicts"),
    planList("Cannot be restored", p.not_restorable.map((c) => `${c.path}: ${c.code || ""} ${c.reason || ""}`)),
    el("div", { class: "actions" },
      el("button", { text: conflicted ? "Apply (abort on conflict)" : "Apply", onclick: () => apply("abort") }),
      conflicted ? el("button", { text: "Skip conflicts", onclick: () => apply("skip") }) : null,
      conflicted ? el("button", { text: "Force", class: "danger", onclick: () => apply("force") }) : null,
      el("button", { text: "Cancel", onclick: () => dialog.close() })));
  dialog.showModal();
}

function planActions(actions) {
  return el("section", {}, el("h3", { text: "Changes" }), el("ul", {}, ...actions.map((a) => el("li", {},
    el("span", { text: `${a.action} ${a.path}${a.lines_added != null ? ` (+${a.lines_added} -${a.lines_removed})` : ""}` }),
    a.diff ? el("details", {}, el("summary", { text: "diff" }), el("pre", { text: a.diff })) : null))));
}

function planList(title, lines, cls) {
  if (!lines.length) return null;
  return el("section", { class: cls || "" }, el("h3", { text: title }), el("ul", {}, ...lines.map((l) => el("li", { text: l }))));
}

async function refresh() {
  const keep = ui.turn && { session: ui.turn.session, turn: ui.turn.turn };
  await loadSessions();
  await loadTimeline(false);
  if (!keep) return;
  const index = ui.entries.findIndex((e) => e.kind === "turn" && e.session === keep.session && e.turn === keep.turn);
  if (index >= 0) await openTurn(index);
}

// ---- keyboard: j/k turns, n/p files ----

document.addEventListener("keydown", (event) => {
  if (event.target.closest("input, textarea, dialog[open]") || event.ctrlKey || event.metaKey || event.altKey) return;
  const turns = turnIndexes();
  const at = turns.indexOf(ui.turnIndex);
  if (event.key === "j" && turns.length) openTurn(turns[Math.min(at + 1, turns.length - 1)]);
  if (event.key === "k" && turns.length) openTurn(turns[Math.max(at - 1, 0)]);
  const files = ui.turn ? Math.min(ui.shown, ui.turn.changes.length) : 0;
  if (event.key === "n" && files) openFile(Math.min(ui.fileIndex + 1, files - 1));
  if (event.key === "p" && files) openFile(Math.max(ui.fileIndex - 1, 0));
});

document.getElementById("unreviewed").addEventListener("change", () => loadTimeline(false));
loadSessions();
loadTimeline(false);
