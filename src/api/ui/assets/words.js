// The review page's words for what the daemon answers, the same as the CLI's (`filewatchd log`,
// src/cli/timeline.rs; the rollback commands, src/cli/print.rs), so that the page and the
// terminal name an undo, a redo, a rollback or a conflict alike. Plain strings: the caller shows
// them with textContent.
"use strict";

/** `1 turn`, `2 turns`. */
function counted(n, noun) {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}

/** A time the daemon gave, as the CLI shows it: local time with its offset, to the second. */
function cliTime(text) {
  const d = new Date(text);
  if (text == null || Number.isNaN(d.getTime())) return String(text);
  const two = (n) => String(n).padStart(2, "0");
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? "-" : "+"}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}${zone}`;
}

/** The timeline's rollback kinds in the CLI's words (the others are their own name). */
const ROLLBACK_NAMES = { time_rollback: "time rollback" };

/** A rollback's status, when it did not simply commit. */
const STATUS_WORDS = {
  recovered: "interrupted by a crash, finished at start-up",
  reverted: "failed: everything it changed was put back, nothing changed",
  reverting: "failed: putting back what it changed, finished at the next start",
  prepared: "being applied",
};

/** A rollback-like entry of the timeline: `undo #3 to before turn 3: +0 ~0 -1, 1 skipped`. */
function rollbackWords(entry) {
  const name = ROLLBACK_NAMES[entry.kind] ?? entry.kind;
  let line = `${name} #${entry.rollback_id} ${wentTo(entry)}`;
  if (entry.counts) line += `: ${rollbackCounts(entry.counts)}`;
  if (entry.actor) line += ` (by ${entry.actor})`;
  if (entry.status && entry.status !== "committed") line += ` (${STATUS_WORDS[entry.status] ?? entry.status})`;
  return line;
}

/** Where a rollback went: `to before turn 3`, `a.txt to seq 12`, `undid #4`. */
function wentTo(entry) {
  const t = entry.target || {};
  let to = "to ?";
  if (t.to === "before" || t.to === "after") to = `to ${t.to} turn ${t.turn}`;
  else if (t.to === "time") to = `to ${cliTime(t.at)}`;
  else if (t.to === "seq") to = `to seq ${t.seq}`;
  else if (t.to === "pin") to = `to pin ${t.pin} (seq ${t.seq})`;
  else if (t.to === "redo") to = entry.redo_of != null ? `undid #${entry.redo_of}` : "undid the latest undo";
  const paths = entry.paths || [];
  if (paths.length === 0) return to;
  if (paths.length === 1) return `${paths[0]} ${to}`;
  if (paths.length === 2) return `${paths[0]}, ${paths[1]} ${to}`;
  return `${paths[0]} and ${paths.length - 1} more ${to}`;
}

/** `undone`, or `partly undone: Cargo.toml kept` when the undo skipped or kept some of its paths. */
function undoneWords(entry) {
  const kept = entry.kept || [];
  if (kept.length === 0) return "undone";
  if (kept.length === 1) return `partly undone: ${kept[0]} kept`;
  return `partly undone: ${kept[0]} and ${kept.length - 1} more kept`;
}

/** Which boundary a plan goes back to, as the CLI's dry run says it. */
function planWords(plan) {
  const t = plan.target || {};
  const of = plan.session != null ? ` of session ${plan.session}` : "";
  if (t.to === "before" || t.to === "after") {
    const back = `Back to ${t.to} turn ${t.turn}${of}.`;
    const merged = (plan.merged || []).length;
    const kept = merged === 0 ? "" : ` ${merged === 1 ? "1 file keeps" : `${merged} files keep`} a later change by others (merged).`;
    if (!plan.turn_wide) return back + kept;
    return `${back}${kept} Some of these paths were written while the session's turns were open, and its agent does not report its tool calls: filewatchd cannot tell its writes from yours made then, so check any file you edited during those turns.`;
  }
  if (t.to === "time") return `Back to the state recorded at ${cliTime(t.at)} (${t.at}).`;
  if (t.to === "seq") return `Back to the state recorded at seq ${t.seq}.`;
  if (t.to === "pin") return `Back to pin ${t.pin} (seq ${t.seq}).`;
  if (t.to === "redo") return `Back to the state before the latest ${plan.session != null ? "undo" : "time rollback"}${of}, for the paths it changed.`;
  return "Back to ?";
}

/** `+0 ~2 -1`, with what was skipped or kept. */
function rollbackCounts(c) {
  let text = `+${c.added ?? 0} ~${c.modified ?? 0} -${c.deleted ?? 0}`;
  if (c.skipped > 0) text += `, ${c.skipped} skipped`;
  if (c.kept > 0) text += `, ${c.kept} kept`;
  return text;
}

/** What an applied rollback did, from its own answer: the paths it changed, skipped and kept. */
function doneWords(answer) {
  const changed = answer.actions.filter((a) => a.status === "done").length;
  let text = `done (${changed} changed, ${answer.skipped.length} skipped`;
  if (answer.kept && answer.kept.length) text += `, ${answer.kept.length} kept`;
  return `${text})`;
}

/** A conflict, or a path that cannot be restored, as the CLI lists it: `a.txt: its reason`. */
function noteWords(note) {
  return `${note.path}: ${note.reason}`;
}
