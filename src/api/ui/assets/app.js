// The review page of filewatchd: the timeline, a turn, a file, and the actions, all
// through the daemon's HTTP API with the page's cookie and CSRF token. No framework; text is
// always set with textContent (nothing from the API is ever parsed as HTML), its controls made
// visible (`visible`).
"use strict";

// The CSRF token comes once, in the login redirect's fragment (never sent to a server), and is
// kept in this origin's localStorage, so that another tab of this browser (a view's URL opened
// there) has it too; it is read again at every call (a new login replaces it) and sent with
// each, reads included. It is taken out of the URL at once: no URL the page shows holds it.
const CSRF_KEY = "filewatchd-csrf";
(() => {
  const given = new URLSearchParams(location.hash.slice(1)).get("t");
  if (!given) return;
  try { localStorage.setItem(CSRF_KEY, given); } catch (_) { sessionStorage.setItem(CSRF_KEY, given); }
  history.replaceState(null, "", location.pathname + location.search);
})();

function csrfToken() {
  try { return localStorage.getItem(CSRF_KEY) ?? sessionStorage.getItem(CSRF_KEY) ?? ""; } catch (_) { return sessionStorage.getItem(CSRF_KEY) ?? ""; }
}

// `view` is what the URL names (view.js); `ticket` tells the latest view shown from older ones
// still loading.
const ui = { entries: [], next: null, turn: null, diffs: null, fileIndex: -1, session: null, shown: 0, view: null, ticket: 0 };
const FILE_PAGE = 200;

async function api(method, path, body) {
  const options = { method, headers: {}, credentials: "same-origin" };
  options.headers["X-CSRF-Token"] = csrfToken();
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const reply = await fetch(path, options);
  let data = null;
  try { data = await reply.json(); } catch (_) { data = null; }
  return { status: reply.status, ok: reply.ok, data };
}

// Bidi controls reorder what is shown (a file `bidi\u202etxt.exe` reads as `bidiexe.txt`) and
// other controls are invisible: every text is shown with them as visible escapes (`\u{202e}`),
// as the CLI shows them. Tab, newline and carriage return are kept: they are layout.
const CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/gu;
function visible(text) {
  return String(text).replace(CONTROLS, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
}

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = visible(value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(typeof child === "string" ? visible(child) : child);
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
  let query = "limit=50";
  if (ui.view && ui.view.unreviewed) query += "&unreviewed=true";
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
  const items = ui.entries.map((entry) => el("li", {}, entryView(entry)));
  const nodes = [el("h2", { text: "Timeline" })];
  nodes.push(items.length ? el("ol", { class: "entries" }, ...items) : el("p", { text: "Nothing recorded yet." }));
  if (ui.next) nodes.push(el("button", { text: "Older", onclick: () => loadTimeline(true) }));
  fill(list, ...nodes);
}

/** Who wrote a run of versions outside any turn. */
const OUTSIDE_WHO = { outside: "you / an editor", found: "found at start-up" };

function entryView(entry) {
  if (OUTSIDE_WHO[entry.kind]) {
    const noun = entry.paths === 1 ? "path" : "paths";
    return el("div", { class: `entry other outside ${entry.kind}`, "data-kind": entry.kind },
      el("span", { class: "what", text: `Outside any turn (${OUTSIDE_WHO[entry.kind]}): ${entry.paths} ${noun}` }),
      el("span", { class: "meta", text: `${when(entry.time)} · ${counts(entry.counts)}` }));
  }
  if (entry.kind !== "turn") {
    return el("div", { class: "entry other", "data-rollback": entry.rollback_id },
      el("span", { class: "what", text: rollbackWords(entry) }),
      el("span", { class: "meta", text: `${entry.session || "workspace"} · ${when(entry.time)}` }));
  }
  const marks = [];
  if (entry.open) marks.push(el("span", { class: "mark open", text: "open" }));
  if (entry.undone) marks.push(el("span", { class: "mark undone", text: undoneWords(entry) }));
  if (entry.reviewed) marks.push(el("span", { class: "mark reviewed", text: "reviewed" }));
  const selected = ui.turn && ui.turn.session === entry.session && ui.turn.turn === entry.turn;
  return el("button", {
    class: "entry turn" + (selected ? " selected" : ""),
    "data-turn": `${entry.session}/${entry.turn}`,
    onclick: () => go(turnView(entry.session, entry.turn)),
  },
    el("span", { class: "what", text: `#${entry.turn} ${entry.prompt || entry.label || "(no prompt)"}` }),
    el("span", { class: "meta", text: `${entry.session} · ${when(entry.time)}${duration(entry.started_at, entry.ended_at)} · ${counts(entry.counts)}` }),
    ...marks);
}

/** The timeline's entry of a turn, when it is loaded. */
function entryOf(session, turn) {
  return ui.entries.find((e) => e.kind === "turn" && e.session === session && e.turn === turn);
}

async function loadSessions() {
  const reply = await api("GET", "/v1/sessions");
  const box = document.getElementById("sessions");
  if (!reply.ok) return fill(box, el("p", { class: "error", text: errorText(reply) }));
  const pick = (name) => () => go(filtered(ui.session === name ? undefined : name));
  fill(box, el("h2", { text: "Sessions" }), el("ul", { class: "sessions" }, ...reply.data.sessions.map((s) => el("li", {},
    el("button", { class: "session" + (ui.session === s.session ? " selected" : ""), "data-session": s.session, "aria-pressed": String(ui.session === s.session), onclick: pick(s.session) },
      el("span", { class: "what", text: `${s.session}${s.agent ? ` (${s.agent})` : ""}: ${s.first_prompt || "no prompt"}` }),
      el("span", { class: "meta", text: `${counted(s.turns, "turn")} · last ${when(s.last_activity)}${s.parent ? ` · fork of ${s.parent} after turn ${s.fork_turn}` : ""}` }))))));
}

// ---- a turn ----

/** The view with the timeline filtered to `session` (all sessions: undefined): what is open stays open if it is of that session. */
function filtered(session) {
  const view = { ...ui.view, filter: session };
  if (session !== undefined && view.session !== undefined && view.session !== session) {
    delete view.session;
    delete view.turn;
    delete view.file;
  }
  return view;
}

/** Shows a turn; false when it cannot (said in the detail) or a newer view came meanwhile. */
async function openTurn(session, turn, ticket) {
  const reply = await api("GET", `${sessionPath(session)}/turns/${turn}`);
  if (ticket !== ui.ticket) return false;
  const detail = document.getElementById("detail");
  if (!reply.ok) {
    ui.turn = null;
    fill(detail, el("p", { class: "error", role: "alert", text: errorText(reply) }));
    return false;
  }
  ui.turn = reply.data;
  ui.diffs = null;
  ui.fileIndex = -1;
  ui.shownDiff = null;
  ui.shown = FILE_PAGE;
  renderTimeline();
  renderTurn();
  detail.scrollTop = 0;
  bringIntoView(detail);
  return true;
}

/** Scrolls `node` to the top of the window when its top is above it or in its lower half (a narrow window puts the detail under the whole timeline). */
function bringIntoView(node) {
  const top = node.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight / 2) node.scrollIntoView({ block: "start" });
}

/** The detail with nothing open. */
function closeDetail() {
  ui.turn = null;
  ui.shownDiff = null;
  renderTimeline();
  fill(document.getElementById("detail"), el("p", { class: "note", text: "Choose a turn, or press j (next) and k (previous)." }));
}

function latestUndoable(session) {
  return ui.entries.find((e) => e.kind === "turn" && e.session === session && !e.undone && !e.open);
}

function renderTurn() {
  const t = ui.turn;
  const entry = entryOf(t.session, t.turn) || {};
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
    el("p", { class: "meta", text: `${when(t.started_at)} – ${when(t.ended_at)} · ${counts(t.counts)}${entry.undone ? ` · ${undoneWords(entry)}` : ""}${t.reviewed ? " · reviewed" : ""}` }),
    planList("Git", (t.git || []).map((moved) => `git: ${moved}`), "git"),
    actions,
    layoutToggle(),
    el("div", { id: "message", role: "status" }),
    el("ol", { class: "files", "aria-label": "Files" }, ...fileItems(0, Math.min(ui.shown, t.changes.length))),
    moreFilesButton(),
    el("div", { id: "file" }));
}

function fileItems(from, to) {
  return ui.turn.changes.slice(from, to).map((change) => el("li", {}, el("button", {
    class: "file", "data-path": change.path, onclick: () => go(fileView(ui.turn.session, ui.turn.turn, change.path)),
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

function showMoreFiles() {
  const from = ui.shown;
  ui.shown = Math.min(from + FILE_PAGE, ui.turn.changes.length);
  document.querySelector("ol.files").append(...fileItems(from, ui.shown));
  const button = document.querySelector("button.more-files");
  const more = moreFilesButton();
  if (more) button.replaceWith(more);
  else button.remove();
}

function fileMarks(change) {
  const marks = [change.kind];
  if (change.too_large) marks.push("too large");
  if (change.unreadable) marks.push("unreadable");
  if (change.ambiguous) marks.push("ambiguous");
  if (change.decided === "tool_call") marks.push("in a tool call");
  if (change.decided === "edit_tool") marks.push("named by its edit tool");
  if (change.decided === "process") marks.push("written by its agent's process");
  const others = change.also_written_by || [];
  if (others.length > 0) marks.push(`also written by ${others.join(", ")} meanwhile`);
  if (change.mode_changed) marks.push("mode changed");
  if (change.reviewed) marks.push("reviewed");
  return marks.join(" · ");
}

function say(text, isError) {
  const box = document.getElementById("message");
  if (box) {
    box.className = isError ? "error" : "ok";
    box.textContent = visible(text);
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

/** Shows the open turn's file `path` (its diff, versions and blame), or says it did not change there. */
async function openFile(path, ticket) {
  const t = ui.turn;
  const index = t.changes.findIndex((c) => c.path === path);
  const box = document.getElementById("file");
  if (index < 0) return fill(box, el("p", { class: "error", role: "alert", text: `${path} did not change in turn ${t.turn}.` }));
  while (ui.shown <= index) showMoreFiles();
  ui.fileIndex = index;
  document.querySelectorAll("button.file").forEach((b, i) => b.classList.toggle("selected", i === index));
  if (!ui.diffs) {
    const reply = await api("GET", `${sessionPath(t.session)}/turns/${t.turn}?diff=true`);
    if (ticket !== ui.ticket) return;
    ui.diffs = reply.ok ? reply.data.changes : [];
  }
  const change = t.changes[index];
  const withDiff = ui.diffs.find((c) => c.path === change.path) || change;
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
    el("h4", {}, "Blame ", viewLink(blameView(change.path), "(on a page of its own)")),
    el("div", { id: "blame", text: "Loading…" }));
  ui.shownDiff = { change: withDiff, revert };
  bringIntoView(box);
  loadVersions(change.path);
  loadBlame(change.path);
}

/** The open turn with no file open. */
function closeFile() {
  ui.fileIndex = -1;
  ui.shownDiff = null;
  document.querySelectorAll("button.file.selected").forEach((b) => b.classList.remove("selected"));
  const box = document.getElementById("file");
  if (box) box.replaceChildren();
}

/** A file's blame (its current lines and the turn that wrote each) and its versions, as a view of its own. */
function showBlame(path) {
  ui.turn = null;
  ui.shownDiff = null;
  renderTimeline();
  const detail = document.getElementById("detail");
  fill(detail, el("h2", { text: `Blame of ${path}` }),
    el("div", { id: "blame", text: "Loading…" }),
    el("h4", { text: "Versions" }), el("div", { id: "versions", text: "Loading…" }));
  detail.scrollTop = 0;
  bringIntoView(detail);
  loadBlame(path);
  loadVersions(path);
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
    el("td", { class: "meta" }, l.turn != null ? viewLink(turnView(l.session, l.turn), `${l.session}/${l.turn}`) : l.origin),
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
    if (done.ok) say(`${title}: ${doneWords(done.data)}.`);
    else say(`${title}: ${errorText(done)}`, true);
  };
  const p = plan.data;
  const conflicted = p.conflicts.length > 0;
  // The buttons come before the lists, which scroll on their own: a plan of 2,000 paths
  // keeps Apply in view.
  fill(dialog,
    el("h2", { text: `${title}: the plan` }),
    el("p", { class: "boundary", text: planWords(p) }),
    el("div", { class: "actions" },
      el("button", { text: conflicted ? "Apply (abort on conflict)" : "Apply", onclick: () => apply("abort") }),
      conflicted ? el("button", { text: "Skip conflicts", onclick: () => apply("skip") }) : null,
      conflicted ? el("button", { text: "Force", class: "danger", onclick: () => apply("force") }) : null,
      el("button", { text: "Cancel", onclick: () => dialog.close() })),
    el("div", { class: "plan-lists" },
      p.actions.length ? planActions(p.actions) : (p.git || []).length ? null : el("p", { text: "Nothing to change." }),
      planList("Git", (p.git || []).map((g) => g.change), "git"),
      planList("Conflicts", p.conflicts.map(noteWords), "conflicts"),
      planList("Cannot be restored", p.not_restorable.map(noteWords))));
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

/** Shows the current view again with what the daemon has now (after an action). */
function refresh() {
  return showView(ui.view, true);
}

// ---- the view: what the URL names (view.js) ----

/** Shows `view`: the timeline it filters to, and the turn, file or blame it names. `reload` fetches all again. */
async function showView(view, reload) {
  const ticket = ++ui.ticket;
  const sameList = ui.view && ui.view.filter === view.filter && ui.view.unreviewed === view.unreviewed;
  ui.view = view;
  ui.session = view.filter ?? null;
  document.getElementById("unreviewed").checked = Boolean(view.unreviewed);
  if (!sameList || reload) await Promise.all([loadSessions(), loadTimeline(false)]);
  if (ticket !== ui.ticket) return;
  if (view.blame !== undefined) return showBlame(view.blame);
  if (view.turn === undefined) return closeDetail();
  const shown = ui.turn && ui.turn.session === view.session && ui.turn.turn === view.turn;
  if ((reload || !shown) && !(await openTurn(view.session, view.turn, ticket))) return;
  if (view.file !== undefined) await openFile(view.file, ticket);
  else closeFile();
}

// ---- keyboard: j/k turns, n/p files ----

document.addEventListener("keydown", (event) => {
  if (event.target.closest("input, textarea, dialog[open]") || event.ctrlKey || event.metaKey || event.altKey) return;
  const turns = ui.entries.filter((e) => e.kind === "turn");
  const at = ui.turn ? turns.findIndex((e) => e.session === ui.turn.session && e.turn === ui.turn.turn) : -1;
  const toTurn = (e) => go(turnView(e.session, e.turn));
  if (event.key === "j" && turns.length) toTurn(turns[Math.min(at + 1, turns.length - 1)]);
  if (event.key === "k" && turns.length) toTurn(turns[Math.max(at - 1, 0)]);
  const files = ui.turn ? Math.min(ui.shown, ui.turn.changes.length) : 0;
  const toFile = (i) => go(fileView(ui.turn.session, ui.turn.turn, ui.turn.changes[i].path));
  if (event.key === "n" && files) toFile(Math.min(ui.fileIndex + 1, files - 1));
  if (event.key === "p" && files) toFile(Math.max(ui.fileIndex - 1, 0));
});

document.getElementById("unreviewed").addEventListener("change", (event) => go({ ...ui.view, unreviewed: event.target.checked || undefined }));
showView(viewOf(location.search));
