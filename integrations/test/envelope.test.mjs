// The opencode plugin and the pi extension against a stand-in `filewatchd` binary (a node script
// that records what it is given): envelope shapes, which events are forwarded, child sessions,
// ordering, the 2 s bound, a missing binary, and silence on stdout. No daemon needed.

import { test, before, after } from "node:test"
import assert from "node:assert/strict"
import { spawn } from "node:child_process"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const HERE = path.dirname(fileURLToPath(import.meta.url))
const INTEGRATIONS = path.resolve(HERE, "..")
const OPENCODE_PLUGIN = path.join(INTEGRATIONS, "opencode", "filewatchd.js")
const PI_EXTENSION = path.join(INTEGRATIONS, "pi", "filewatchd.ts")
const FIXTURES = path.resolve(INTEGRATIONS, "..", "tests", "fixtures", "hooks")

let tmp, root, stubBin, logFile, piCopy, opencode, piFactory

const STUB = `#!${process.execPath}
const fs = require("fs")
const t0 = Date.now()
let input = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (d) => (input += d))
process.stdin.on("end", () => {
  const mode = process.env.STUB_MODE || ""
  let envelope = null
  try { envelope = JSON.parse(input) } catch {}
  const isEnd = /idle|status|agent_end|agent_settled/.test(input)
  const delay = mode === "slowend" && isEnd ? 400 : 0
  setTimeout(() => {
    fs.appendFileSync(process.env.STUB_LOG, JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), pid: process.pid, raw: input, envelope, t0, t1: Date.now() }) + "\\n")
    if (mode === "noisy") {
      process.stdout.write("NOISE ON STDOUT\\n")
      process.stderr.write("warning: the daemon is not running\\nsecond line\\n")
    }
    if (mode === "fail") { process.stderr.write("boom\\n"); process.exit(1) }
    if (mode === "sleep") setTimeout(() => {}, 30000)
  }, delay)
})
`

function records() {
  if (!fs.existsSync(logFile)) return []
  return fs
    .readFileSync(logFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

function resetLog() {
  fs.rmSync(logFile, { force: true })
}

function fixture(agent, name, sessionId = "ses_stub_1") {
  const text = fs
    .readFileSync(path.join(FIXTURES, agent, `${name}.json`), "utf8")
    .replaceAll("/tmp/FIXTURE_CWD", root)
    .replaceAll("fixture-session-1", sessionId)
  return JSON.parse(text)
}

async function timed(fn) {
  const t = Date.now()
  const value = await fn()
  return { ms: Date.now() - t, value }
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

before(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "fwd-stub-")))
  root = path.join(tmp, "ws")
  fs.mkdirSync(root)
  stubBin = path.join(tmp, "filewatchd-stub")
  fs.writeFileSync(stubBin, STUB, { mode: 0o755 })
  logFile = path.join(tmp, "log.jsonl")
  piCopy = path.join(tmp, "pi-filewatchd.mjs")
  fs.copyFileSync(PI_EXTENSION, piCopy)
  process.env.FILEWATCHD_BIN = stubBin
  process.env.STUB_LOG = logFile
  delete process.env.STUB_MODE
  opencode = await import(pathToFileURL(OPENCODE_PLUGIN).href)
  piFactory = (await import(pathToFileURL(piCopy).href)).default
})

after(() => {
  delete process.env.STUB_MODE
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

async function opencodeHooks() {
  return opencode.FilewatchdPlugin({ directory: root, worktree: root, project: {}, client: {}, $: undefined })
}

function piHandlers() {
  const handlers = new Map()
  const pi = {
    on(name, handler) {
      handlers.set(name, handler)
    },
  }
  piFactory(pi)
  return handlers
}

const piCtx = () => ({ cwd: root, sessionManager: { getSessionId: () => "pi-stub-1" } })

test("opencode: the module exports exactly one plugin function (safe for every loader)", () => {
  assert.deepEqual(Object.keys(opencode), ["FilewatchdPlugin"])
  assert.equal(typeof opencode.FilewatchdPlugin, "function")
})

test("opencode: forwards the four session events and user chat.message with the agreed envelopes", async () => {
  resetLog()
  const hooks = await opencodeHooks()
  assert.deepEqual(Object.keys(hooks).sort(), ["chat.message", "event", "tool.execute.after", "tool.execute.before"])
  assert.deepEqual(records(), [], "creating the plugin must start no process")

  const created = fixture("opencode", "session.created")
  await hooks.event({ event: created })
  const chat = fixture("opencode", "chat.message")
  chat.output.parts.push({ id: "prt_2", type: "file", url: "file:///x", mime: "text/plain" })
  chat.output.parts.push({ id: "prt_3", type: "text", text: "Called the Read tool with ...", synthetic: true })
  assert.equal(await hooks["chat.message"](chat.input, chat.output), undefined)
  await hooks.event({ event: fixture("opencode", "message.updated") }) // not forwarded
  await hooks.event({ event: { type: "session.status", properties: { sessionID: "ses_stub_1", status: { type: "busy" } } } })
  await hooks.event({ event: fixture("opencode", "session.status") })
  await hooks.event({ event: fixture("opencode", "session.idle") })
  await hooks.event({ event: fixture("opencode", "session.deleted") })
  // assistant messages are not turns
  await hooks["chat.message"]({ sessionID: "ses_stub_1" }, { message: { role: "assistant", sessionID: "ses_stub_1" }, parts: [] })

  const got = records()
  for (const r of got) {
    assert.deepEqual(r.argv, ["hook", "opencode"])
    assert.equal(r.cwd, root)
  }
  assert.deepEqual(
    got.map((r) => r.envelope.hook ?? r.envelope.event.type),
    ["session.created", "chat.message", "session.status", "session.idle", "session.deleted"],
  )
  assert.deepEqual(got[0].envelope, { directory: root, event: created })
  assert.deepEqual(got[1].envelope, {
    hook: "chat.message",
    directory: root,
    input: chat.input,
    output: {
      message: { role: "user", sessionID: "ses_stub_1" },
      parts: [{ type: "text", text: "Rename fn to fx and update the callers" }],
    },
  })
  assert.deepEqual(got[2].envelope, { directory: root, event: fixture("opencode", "session.status") })
  assert.deepEqual(got[3].envelope, { directory: root, event: fixture("opencode", "session.idle") })
})

test("opencode: an old-style chat.message with empty input gets the session id from the message", async () => {
  resetLog()
  const hooks = await opencodeHooks()
  await hooks["chat.message"]({}, { message: { role: "user", sessionID: "ses_old" }, parts: [{ type: "text", text: "hi" }] })
  const [r] = records()
  assert.equal(r.envelope.input.sessionID, "ses_old")
  assert.deepEqual(r.envelope.output.parts, [{ type: "text", text: "hi" }])
})

test("opencode: child sessions (parentID) are skipped, learned from session.created or session.updated", async () => {
  resetLog()
  const hooks = await opencodeHooks()
  const child = fixture("opencode", "session.created", "ses_child_a")
  child.properties.info.parentID = "ses_parent"
  await hooks.event({ event: child })
  const updated = fixture("opencode", "session.created", "ses_child_b")
  updated.type = "session.updated"
  updated.properties.info.parentID = "ses_parent"
  await hooks.event({ event: updated })
  // an assistant message's parentID is its user message, not a parent session
  await hooks.event({
    event: { type: "message.updated", properties: { info: { id: "ses_not_child", sessionID: "ses_x", role: "assistant", parentID: "msg_1" } } },
  })
  for (const id of ["ses_child_a", "ses_child_b"]) {
    const chat = fixture("opencode", "chat.message", id)
    await hooks["chat.message"](chat.input, chat.output)
    await hooks.event({ event: fixture("opencode", "session.status", id) })
    await hooks.event({ event: fixture("opencode", "session.idle", id) })
    await hooks.event({ event: fixture("opencode", "session.deleted", id) })
  }
  assert.deepEqual(records(), [])
  const chat = fixture("opencode", "chat.message", "ses_not_child")
  await hooks["chat.message"](chat.input, chat.output)
  assert.equal(records().length, 1)
})

test("opencode: a tool call's start and end are forwarded with the file an edit tool names, nothing else", async () => {
  resetLog()
  const hooks = await opencodeHooks()
  const before = fixture("opencode", "tool.execute.before")
  const after = fixture("opencode", "tool.execute.after")
  assert.equal(await hooks["tool.execute.before"](before.input, before.output), undefined)
  assert.equal(await hooks["tool.execute.after"](after.input, after.output), undefined)
  const got = records().map((r) => r.envelope)
  const file = path.join(root, "src/lib.rs")
  const call = { tool: "edit", sessionID: before.input.sessionID, callID: before.input.callID }
  assert.deepEqual(got, [
    { hook: "tool.execute.before", directory: root, input: call, output: { args: { filePath: file } } },
    { hook: "tool.execute.after", directory: root, input: { ...call, args: { filePath: file } } },
  ])
  assert.ok(!records().some((r) => r.raw.includes("oldString")), "an edit's content is never forwarded")
})

test("pi: registers the seven events, starts nothing in the factory, forwards the slim envelopes", async () => {
  resetLog()
  const handlers = piHandlers()
  assert.deepEqual([...handlers.keys()].sort(), [
    "agent_end",
    "agent_settled",
    "before_agent_start",
    "session_shutdown",
    "session_start",
    "tool_call",
    "tool_execution_end",
  ])
  assert.deepEqual(records(), [])
  const names = ["session_start", "before_agent_start", "agent_end", "agent_settled", "session_shutdown"]
  for (const name of names) {
    const result = await handlers.get(name)(fixture("pi", name), piCtx())
    assert.equal(result, undefined, `${name} must return nothing`)
  }
  const got = records()
  for (const r of got) {
    assert.deepEqual(r.argv, ["hook", "pi"])
    assert.equal(r.cwd, root)
    assert.ok(!r.raw.includes("systemPrompt"), "systemPrompt must never be forwarded")
    assert.ok(!r.raw.includes("messages"), "agent_end messages are not forwarded")
  }
  assert.deepEqual(
    got.map((r) => r.envelope),
    [
      { session_id: "pi-stub-1", cwd: root, event: { type: "session_start" } },
      { session_id: "pi-stub-1", cwd: root, event: { type: "before_agent_start", prompt: "Rename fn to fx and update the callers" } },
      { session_id: "pi-stub-1", cwd: root, event: { type: "agent_end" } },
      { session_id: "pi-stub-1", cwd: root, event: { type: "agent_settled" } },
      { session_id: "pi-stub-1", cwd: root, event: { type: "session_shutdown" } },
    ],
  )
})

test("pi: a tool call's start and end carry its id, its tool and the path it names, never its content", async () => {
  resetLog()
  const handlers = piHandlers()
  for (const name of ["tool_call", "tool_execution_end"]) {
    await handlers.get(name)(fixture("pi", name), piCtx())
  }
  const id = fixture("pi", "tool_call").toolCallId
  assert.deepEqual(
    records().map((r) => r.envelope.event),
    [
      { type: "tool_call", toolCallId: id, toolName: "edit", input: { path: path.join(root, "src/lib.rs") } },
      { type: "tool_execution_end", toolCallId: id, toolName: "edit", input: {} },
    ],
  )
  assert.ok(!records().some((r) => r.raw.includes("newText")), "an edit's content is never forwarded")
})

test("pi: once agent_settled has been seen, agent_end is no longer forwarded (per load)", async () => {
  resetLog()
  const handlers = piHandlers()
  await handlers.get("agent_end")(fixture("pi", "agent_end"), piCtx())
  await handlers.get("agent_settled")(fixture("pi", "agent_settled"), piCtx())
  await handlers.get("agent_end")(fixture("pi", "agent_end"), piCtx())
  await handlers.get("agent_settled")(fixture("pi", "agent_settled"), piCtx())
  assert.deepEqual(
    records().map((r) => r.envelope.event.type),
    ["agent_end", "agent_settled", "agent_settled"],
  )
  resetLog()
  await piHandlers().get("agent_end")(fixture("pi", "agent_end"), piCtx()) // a fresh load forwards it
  assert.equal(records().length, 1)
})

test("both: calls fired without awaiting reach the hook one after another, in order", async () => {
  resetLog()
  process.env.STUB_MODE = "slowend"
  try {
    const hooks = await opencodeHooks()
    const chat = fixture("opencode", "chat.message", "ses_order")
    const pending = [
      hooks.event({ event: fixture("opencode", "session.status", "ses_order") }), // slow end
      hooks["chat.message"](chat.input, chat.output), // fast start must not overtake it
    ]
    const handlers = piHandlers()
    pending.push(handlers.get("agent_end")(fixture("pi", "agent_end"), piCtx()))
    pending.push(handlers.get("before_agent_start")(fixture("pi", "before_agent_start"), piCtx()))
    await Promise.all(pending)
    // Each file keeps its own queue (they never share a process), so check each file's calls.
    for (const agent of ["opencode", "pi"]) {
      const got = records().filter((r) => r.argv[1] === agent)
      assert.deepEqual(
        got.map((r) => r.envelope.hook ?? r.envelope.event.type),
        agent === "opencode" ? ["session.status", "chat.message"] : ["agent_end", "before_agent_start"],
      )
      assert.ok(got[1].t0 >= got[0].t1, `${agent}: the start ran after the slow end had finished`)
    }
  } finally {
    delete process.env.STUB_MODE
  }
})

test("both: a hook that hangs is cut off at 2 s and killed; the handler does not throw", async () => {
  resetLog()
  process.env.STUB_MODE = "sleep"
  try {
    const hooks = await opencodeHooks()
    const chat = fixture("opencode", "chat.message", "ses_hang")
    const a = await timed(() => hooks["chat.message"](chat.input, chat.output))
    assert.ok(a.ms < 2500, `chat.message took ${a.ms} ms`)
    const handlers = piHandlers()
    const b = await timed(() => handlers.get("before_agent_start")(fixture("pi", "before_agent_start"), piCtx()))
    assert.ok(b.ms < 2500, `before_agent_start took ${b.ms} ms`)
    const pids = records().map((r) => r.pid)
    assert.equal(pids.length, 2)
    const deadline = Date.now() + 2000
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    assert.ok(!pids.some(alive), "the hung hook processes were killed")
  } finally {
    delete process.env.STUB_MODE
  }
})

test("both: a missing binary or a failing hook never throws", async () => {
  const saved = process.env.FILEWATCHD_BIN
  try {
    process.env.FILEWATCHD_BIN = path.join(tmp, "no-such-filewatchd")
    const hooks = await opencodeHooks()
    const chat = fixture("opencode", "chat.message", "ses_missing")
    assert.equal(await hooks["chat.message"](chat.input, chat.output), undefined)
    assert.equal(await hooks.event({ event: fixture("opencode", "session.idle", "ses_missing") }), undefined)
    const handlers = piHandlers()
    for (const [name, h] of handlers) assert.equal(await h(fixture("pi", name), piCtx()), undefined)
    process.env.FILEWATCHD_BIN = saved
    process.env.STUB_MODE = "fail"
    assert.equal(await hooks["chat.message"](chat.input, chat.output), undefined)
    for (const [name, h] of handlers) assert.equal(await h(fixture("pi", name), piCtx()), undefined)
    // garbage in: no throw either
    await hooks.event(undefined)
    await hooks.event(null)
    await hooks.event({ event: null })
    await hooks["chat.message"](undefined, undefined)
    await hooks["chat.message"](null, null)
    await hooks["chat.message"](null, { message: { role: "user", sessionID: "s" }, parts: null })
    const bare = await opencode.FilewatchdPlugin(undefined)
    await bare.event({ event: fixture("opencode", "session.idle", "ses_bare") })
    await handlers.get("agent_end")(undefined, undefined)
    await handlers.get("agent_end")(null, null)
    await handlers.get("agent_end")({ type: "agent_end" }, { sessionManager: { getSessionId: () => { throw new Error("x") } } })
  } finally {
    process.env.FILEWATCHD_BIN = saved
    delete process.env.STUB_MODE
  }
})

test("both: nothing reaches stdout, and one outage gives one warning line on stderr", async () => {
  const driver = path.join(tmp, "driver.mjs")
  fs.writeFileSync(
    driver,
    `
import { FilewatchdPlugin } from ${JSON.stringify(pathToFileURL(OPENCODE_PLUGIN).href)}
import piExt from ${JSON.stringify(pathToFileURL(piCopy).href)}
const root = ${JSON.stringify(root)}
const hooks = await FilewatchdPlugin({ directory: root, worktree: root, project: {}, client: {}, $: undefined })
for (let i = 0; i < 3; i++) {
  await hooks["chat.message"]({ sessionID: "s" }, { message: { role: "user", sessionID: "s" }, parts: [{ type: "text", text: "x" }] })
  await hooks.event({ event: { type: "session.idle", properties: { sessionID: "s" } } })
}
const handlers = {}
piExt({ on: (n, h) => (handlers[n] = h) })
const ctx = { cwd: root, sessionManager: { getSessionId: () => "p" } }
for (let i = 0; i < 3; i++) {
  await handlers.before_agent_start({ type: "before_agent_start", prompt: "x" }, ctx)
  await handlers.agent_end({ type: "agent_end" }, ctx)
}
`,
  )
  const child = spawn(process.execPath, [driver], {
    env: { ...process.env, STUB_MODE: "noisy" },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let out = ""
  let err = ""
  child.stdout.on("data", (d) => (out += d))
  child.stderr.on("data", (d) => (err += d))
  const code = await new Promise((resolve) => child.on("close", resolve))
  assert.equal(code, 0, err)
  assert.equal(out, "", "nothing on stdout")
  const lines = err.split("\n").filter(Boolean)
  // The two files are separate modules, so each may warn once.
  assert.ok(lines.length <= 2, `at most one warning per file, got:\n${err}`)
  for (const line of lines) assert.match(line, /^filewatchd: warning: the daemon is not running$/)
})
