// filewatchd extension for pi: marks each prompt as a filewatchd turn.
//
// Put this file in `.pi/extensions/` (project; loads once the project is trusted) or
// `~/.pi/agent/extensions/` (global). It forwards a few pi events to `filewatchd hook pi`
// (one JSON envelope on stdin):
//   before_agent_start           -> the daemon starts a turn labelled with the prompt
//   agent_end, agent_settled     -> the daemon ends the open turn (ending twice is harmless;
//                                   agent_end is skipped once this pi has sent agent_settled,
//                                   and when its last assistant message ended in an error:
//                                   pi may then retry or compact and continue the same prompt)
//   session_start                -> the daemon starts when none runs (the turn goes on)
//   session_shutdown             -> the daemon ends any turn left open
//   tool_call, tool_execution_end -> a tool call starts / ends: writes between the calls are the
//                                   person's, not the turn's (`write`/`edit` name their file).
//                                   `tool_call` is awaited before the tool runs (it may block
//                                   it); `tool_execution_start` is not, so it could come late.
// Only `type` (with `prompt` for before_agent_start; the call's id, tool and file path for the
// tool events) is sent; never systemPrompt or its options, never a tool's content.
//
// It never hurts pi: no shell, at most 2 s per call (then the process is killed), every error
// caught, nothing printed on stdout, at most one warning line on stderr per outage.
// The binary is $FILEWATCHD_BIN, else the default below: `filewatchd` on PATH in this file as
// shipped and in a project copy, the installing binary's full path once
// `filewatchd hook install --user` has copied it. The first line marks the file as filewatchd's
// (install and uninstall recognise it by that line): keep it as it is.
//
// Written without type annotations so the same text is valid TypeScript and plain JavaScript.

import { spawn } from "node:child_process"
import { statSync } from "node:fs"

const AGENT = "pi"
const TIMEOUT_MS = 2000
const MAX_LABEL_CHARS = 8000
const FORWARDED = [
  "session_start",
  "before_agent_start",
  "agent_end",
  "agent_settled",
  "session_shutdown",
  "tool_call",
  "tool_execution_end",
]

let warned = false

/** @param {unknown} error */
function describe(error) {
  const e = /** @type {any} */ (error)
  return String((e && e.message) || e)
}

/** @param {string} message */
function warn(message) {
  if (warned) return
  warned = true
  try {
    const line = String(message).split("\n")[0].slice(0, 400)
    console.error(line.startsWith("filewatchd") ? line : `filewatchd: ${line}`)
  } catch {}
}

/** @param {unknown} path */
function isDir(path) {
  try {
    return typeof path === "string" && path !== "" && statSync(path).isDirectory()
  } catch {
    return false
  }
}

/**
 * Runs `filewatchd hook pi` once; resolves (never rejects) with a problem string or null.
 * @param {string} body @param {unknown} cwd @returns {Promise<string | null>}
 */
function runHook(body, cwd) {
  return new Promise((resolve) => {
    let done = false
    /** @type {any} */
    let timer
    /** @type {any} */
    let child
    let stderr = ""
    /** @param {string | null} problem */
    const finish = (problem) => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      resolve(problem)
    }
    try {
      const bin = process.env.FILEWATCHD_BIN || "filewatchd"
      child = spawn(bin, ["hook", AGENT], {
        cwd: isDir(cwd) ? String(cwd) : undefined,
        env: process.env,
        stdio: ["pipe", "ignore", "pipe"],
        windowsHide: true,
      })
      timer = setTimeout(() => {
        try {
          child.kill("SIGKILL")
        } catch {}
        try {
          if (child.stderr) child.stderr.destroy()
        } catch {}
        finish(`\`${bin} hook ${AGENT}\` did not finish within ${TIMEOUT_MS / 1000} s and was stopped`)
      }, TIMEOUT_MS)
      if (timer && timer.unref) timer.unref()
      child.on("error", (/** @type {any} */ error) => finish(`cannot run \`${bin} hook ${AGENT}\`: ${describe(error)}`))
      if (child.stderr) {
        child.stderr.on("error", () => {})
        child.stderr.on("data", (/** @type {any} */ chunk) => {
          if (stderr.length < 4096) stderr += String(chunk)
        })
      }
      child.on("close", (/** @type {any} */ code, /** @type {any} */ signal) => {
        const text = stderr.trim()
        if (code === 0) finish(text || null)
        else finish(text || `\`${bin} hook ${AGENT}\` exited with ${code ?? signal}`)
      })
      if (child.stdin) {
        child.stdin.on("error", () => {})
        child.stdin.end(body + "\n")
      }
    } catch (error) {
      finish(`cannot run filewatchd: ${describe(error)}`)
    }
  })
}

// Calls run one after another (a turn end must reach the daemon before the next turn start), and
// a caller waits at most TIMEOUT_MS (plus a little) for its own call, queue included.
/** @type {Promise<void>} */
let tail = Promise.resolve()

/** @param {string} body @param {unknown} cwd @returns {Promise<void>} */
function forward(body, cwd) {
  const job = tail
    .then(() => runHook(body, cwd))
    .then((problem) => {
      if (problem) warn(problem)
      else warned = false // a later outage warns again
    })
    .catch(() => {})
  tail = job
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, TIMEOUT_MS + 100)
    if (timer && timer.unref) timer.unref()
    job.then(() => {
      clearTimeout(timer)
      resolve(undefined)
    })
  })
}

/** @param {any} event @param {any} ctx @returns {Promise<void>} */
async function handle(event, ctx) {
  try {
    if (!event || typeof event !== "object" || !ctx) return
    let sessionId
    try {
      sessionId = ctx.sessionManager && ctx.sessionManager.getSessionId()
    } catch {}
    if (typeof sessionId !== "string" || sessionId === "") return
    // Only the type, and the prompt of before_agent_start: never systemPrompt or its options.
    const type = String(event.type)
    const slim =
      type === "before_agent_start" && typeof event.prompt === "string"
        ? { type, prompt: event.prompt.slice(0, MAX_LABEL_CHARS) }
        : type === "tool_call" || type === "tool_execution_end"
          ? toolCall(type, event)
          : { type }
    const cwd = typeof ctx.cwd === "string" ? ctx.cwd : undefined
    await forward(JSON.stringify({ session_id: sessionId, cwd, event: slim }), cwd)
  } catch (error) {
    warn(describe(error))
  }
}

/** A tool call's start or end: its id, its tool, and the file a `write` or `edit` names.
 * @param {string} type @param {any} event */
function toolCall(type, event) {
  const path = event.input && typeof event.input.path === "string" ? event.input.path : undefined
  return { type, toolCallId: event.toolCallId, toolName: event.toolName, input: path === undefined ? {} : { path } }
}

/**
 * An agent_end whose last assistant message ended in an error (a context overflow, an overloaded
 * API) may be followed by pi's auto-retry or by an auto-compaction and `agent.continue()`: the
 * same prompt goes on (agent_start, tool calls, agent_end again) without a new
 * before_agent_start. Its writes belong to the turn, so that agent_end does not end it.
 * @param {any} event @returns {boolean}
 */
function mayContinue(event) {
  try {
    const messages = event && Array.isArray(event.messages) ? event.messages : []
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i]
      if (m && m.role === "assistant") return m.stopReason === "error"
    }
  } catch {}
  return false
}

/** @param {any} pi */
export default function filewatchd(pi) {
  // Registering handlers only: the factory itself starts no process.
  // Once this pi has sent an agent_settled, agent_end is no longer forwarded: a retry, compaction
  // or queued follow-up may still run after agent_end, and its writes belong to the turn.
  // (A pi without agent_settled, the older pi-mono, ends every turn at agent_end.)
  let settledSeen = false
  for (const name of FORWARDED) {
    try {
      pi.on(name, async (/** @type {any} */ event, /** @type {any} */ ctx) => {
        if (name === "agent_settled") settledSeen = true
        else if (name === "agent_end" && (settledSeen || mayContinue(event))) return
        // pi passes the event object; fall back to the registered name if `type` is missing.
        const typed = event && typeof event === "object" && event.type ? event : { ...(event || {}), type: name }
        await handle(typed, ctx)
      })
    } catch {}
  }
}
