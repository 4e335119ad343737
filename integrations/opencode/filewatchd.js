// filewatchd plugin for opencode: marks each user prompt as a filewatchd turn.
//
// Put this file in `.opencode/plugin/` (project) or `~/.config/opencode/plugin/` (global).
// It forwards a few opencode events to `filewatchd hook opencode` (one JSON envelope on stdin):
//   chat.message (user role)          -> the daemon starts a turn labelled with the prompt text
//   session.status idle, session.idle -> the daemon ends the session's open turn
//   session.created                   -> the daemon starts when none runs
//   session.deleted                   -> the daemon ends any turn left open
//   tool.execute.before / after       -> a tool call starts / ends: writes between the calls are
//                                        the person's, not the turn's (`edit`/`write` name their file)
// Child sessions (subagents, `parentID` set) are skipped: their writes belong to the parent's turn.
//
// It never hurts opencode: no shell, at most 2 s per call (then the process is killed), every
// error caught, nothing printed on stdout, at most one warning line on stderr per outage.
// The binary is $FILEWATCHD_BIN, else the default below: `filewatchd` on PATH in this file as
// shipped and in a project copy, the installing binary's full path once
// `filewatchd hook install --user` has copied it. The first line marks the file as filewatchd's
// (install and uninstall recognise it by that line): keep it as it is.
//
// Only ONE export, on purpose: opencode's legacy loader calls every export of the module as a
// plugin function (a second export, e.g. a V1 `export default { id, server }` object, makes older
// versions fail to load the plugin), and newer loaders still accept a module whose exports are
// plugin functions.

import { spawn } from "node:child_process"
import { statSync } from "node:fs"

const AGENT = "opencode"
const TIMEOUT_MS = 2000
const MAX_LABEL_CHARS = 8000
const FORWARDED = new Set(["session.created", "session.status", "session.idle", "session.deleted"])
// Events whose `properties.info` is a session (so `info.parentID` means "child session").
// `message.updated` is NOT one: an assistant message's `parentID` is its user message.
const SESSION_INFO_EVENTS = new Set(["session.created", "session.updated", "session.deleted"])

let warned = false

function warn(message) {
  if (warned) return
  warned = true
  try {
    const line = String(message).split("\n")[0].slice(0, 400)
    console.error(line.startsWith("filewatchd") ? line : `filewatchd: ${line}`)
  } catch {}
}

function isDir(path) {
  try {
    return typeof path === "string" && path !== "" && statSync(path).isDirectory()
  } catch {
    return false
  }
}

function serialize(envelope, fallback) {
  try {
    return JSON.stringify(envelope)
  } catch {
    try {
      return JSON.stringify(fallback())
    } catch {
      return undefined
    }
  }
}

// Runs `filewatchd hook opencode` once; resolves (never rejects) with a problem string or null.
function runHook(body, cwd) {
  return new Promise((resolve) => {
    let done = false
    let timer
    let child
    let stderr = ""
    const finish = (problem) => {
      if (done) return
      done = true
      if (timer) clearTimeout(timer)
      resolve(problem)
    }
    try {
      const bin = process.env.FILEWATCHD_BIN || "filewatchd"
      child = spawn(bin, ["hook", AGENT], {
        cwd: isDir(cwd) ? cwd : undefined,
        env: process.env,
        stdio: ["pipe", "ignore", "pipe"],
        windowsHide: true,
      })
      timer = setTimeout(() => {
        try {
          child.kill("SIGKILL")
        } catch {}
        try {
          child.stderr?.destroy()
        } catch {}
        finish(`\`${bin} hook ${AGENT}\` did not finish within ${TIMEOUT_MS / 1000} s and was stopped`)
      }, TIMEOUT_MS)
      timer.unref?.()
      child.on("error", (error) => finish(`cannot run \`${bin} hook ${AGENT}\`: ${error?.message ?? error}`))
      child.stderr?.on("error", () => {})
      child.stderr?.on("data", (chunk) => {
        if (stderr.length < 4096) stderr += String(chunk)
      })
      child.on("close", (code, signal) => {
        const text = stderr.trim()
        if (code === 0) finish(text || null)
        else finish(text || `\`${bin} hook ${AGENT}\` exited with ${code ?? signal}`)
      })
      child.stdin?.on("error", () => {})
      child.stdin?.end(body + "\n")
    } catch (error) {
      finish(`cannot run filewatchd: ${error?.message ?? error}`)
    }
  })
}

// Calls run one after another (a turn end must reach the daemon before the next turn start), and
// a caller waits at most TIMEOUT_MS (plus a little) for its own call, queue included.
let tail = Promise.resolve()

function forward(body, cwd) {
  if (body === undefined) return Promise.resolve()
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
    timer.unref?.()
    job.then(() => {
      clearTimeout(timer)
      resolve(undefined)
    })
  })
}

function eventSessionID(event) {
  const props = event.properties || {}
  if (typeof props.sessionID === "string") return props.sessionID
  if (props.info && typeof props.info.id === "string") return props.info.id
  return undefined
}

function promptParts(parts) {
  if (!Array.isArray(parts)) return []
  const text = parts.filter((p) => p && p.type === "text" && typeof p.text === "string")
  // Attached files and command expansions arrive as synthetic text parts; label with what the user typed.
  const typed = text.filter((p) => p.synthetic !== true && p.ignored !== true)
  let budget = MAX_LABEL_CHARS
  const out = []
  for (const p of typed.length > 0 ? typed : text) {
    if (budget <= 0) break
    const piece = p.text.slice(0, budget)
    budget -= piece.length
    out.push({ type: "text", text: piece })
  }
  return out
}

// What a tool call's envelope keeps of its arguments: the file an edit tool names, a patch.
function fileArgs(args) {
  if (!args || typeof args !== "object") return undefined
  const kept = {}
  if (typeof args.filePath === "string") kept.filePath = args.filePath
  if (typeof args.patchText === "string") kept.patchText = args.patchText.slice(0, 1000000)
  return kept
}

export const FilewatchdPlugin = async (input) => {
  const directory = input && typeof input === "object" ? input.directory : undefined
  const children = new Set() // ids of child (subagent) sessions

  return {
    event: async (arg) => {
      try {
        const event = arg && typeof arg === "object" ? arg.event : undefined
        if (!event || typeof event !== "object") return
        const type = event.type
        const props = event.properties || {}
        if (SESSION_INFO_EVENTS.has(type) && props.info && props.info.parentID && typeof props.info.id === "string") {
          children.add(props.info.id)
        }
        if (!FORWARDED.has(type)) return
        if (type === "session.status" && props.status?.type !== "idle") return // busy/retry: nothing to do
        const sessionID = eventSessionID(event)
        if (sessionID !== undefined && children.has(sessionID)) return
        const body = serialize({ directory, event }, () => ({ directory, event: { type, properties: { sessionID } } }))
        await forward(body, directory)
      } catch (error) {
        warn(error?.message ?? error)
      }
    },

    "chat.message": async (input, output) => {
      try {
        const message = output?.message
        if (!message || message.role !== "user") return
        // Older opencode passed an empty `input`; the session id is then on the message.
        const sessionID = input?.sessionID ?? message.sessionID
        if (typeof sessionID !== "string" || children.has(sessionID)) return
        const parts = promptParts(output.parts)
        const envelope = {
          hook: "chat.message",
          directory,
          input: { ...(input && typeof input === "object" ? input : {}), sessionID },
          output: { message: { role: message.role, sessionID: message.sessionID ?? sessionID }, parts },
        }
        const body = serialize(envelope, () => ({ ...envelope, input: { sessionID } }))
        await forward(body, directory)
      } catch (error) {
        warn(error?.message ?? error)
      }
    },

    // A child session's calls run inside its parent's `task` call: the parent's window.
    "tool.execute.before": async (input, output) => {
      try {
        const sessionID = input?.sessionID
        if (typeof sessionID !== "string" || children.has(sessionID)) return
        const envelope = {
          hook: "tool.execute.before",
          directory,
          input: { tool: input.tool, sessionID, callID: input.callID },
          output: { args: fileArgs(output?.args) },
        }
        await forward(serialize(envelope, () => ({ ...envelope, output: {} })), directory)
      } catch (error) {
        warn(error?.message ?? error)
      }
    },

    "tool.execute.after": async (input) => {
      try {
        const sessionID = input?.sessionID
        if (typeof sessionID !== "string" || children.has(sessionID)) return
        const envelope = {
          hook: "tool.execute.after",
          directory,
          input: { tool: input.tool, sessionID, callID: input.callID, args: fileArgs(input.args) },
        }
        await forward(serialize(envelope, () => ({ hook: envelope.hook, directory, input: { sessionID } })), directory)
      } catch (error) {
        warn(error?.message ?? error)
      }
    },
  }
}
