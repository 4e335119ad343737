// Shared by opencode.test.mjs and pi.test.mjs: the real daemon, started on a temp workspace,
// and its HTTP API. Not a test file itself (no tests are declared here).

import { spawn, spawnSync } from "node:child_process"
import fs from "node:fs"
import http from "node:http"
import path from "node:path"
import { fileURLToPath } from "node:url"

const HERE = path.dirname(fileURLToPath(import.meta.url))
export const REPO = path.resolve(HERE, "..", "..")
export const BIN =
  process.env.FILEWATCHD_TEST_BIN || path.join(REPO, "target", "debug", process.platform === "win32" ? "filewatchd.exe" : "filewatchd")
export const MISSING = fs.existsSync(BIN) ? false : `${BIN} is missing: run \`cargo build\` in ${REPO} first`


export function request(daemon, method, urlPath) {
  return new Promise((resolve, reject) => {
    const url = new URL(daemon.url + urlPath)
    const req = http.request(
      { method, host: url.hostname, port: url.port, path: url.pathname + url.search, headers: { Authorization: `Bearer ${daemon.token}` } },
      (res) => {
        let body = ""
        res.setEncoding("utf8")
        res.on("data", (d) => (body += d))
        res.on("end", () => {
          let json = null
          try {
            json = JSON.parse(body)
          } catch {}
          resolve({ status: res.statusCode, body: json, text: body })
        })
      },
    )
    req.setTimeout(5000, () => req.destroy(new Error("timeout")))
    req.on("error", reject)
    req.end()
  })
}

export async function startDaemon(root, stateDir) {
  const stderrFile = path.join(stateDir, "..", "daemon.stderr")
  const errFd = fs.openSync(stderrFile, "w")
  const child = spawn(BIN, ["serve", "--root", root, "--state-dir", stateDir], {
    stdio: ["ignore", "ignore", errFd],
    env: { ...process.env, FILEWATCHD_URL: "", FILEWATCHD_TOKEN: "" },
  })
  fs.closeSync(errFd)
  let exited = null
  child.on("exit", (code, signal) => (exited = code ?? signal))
  const deadline = Date.now() + 30000
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`daemon exited (${exited}): ${fs.readFileSync(stderrFile, "utf8")}`)
    try {
      const info = JSON.parse(fs.readFileSync(path.join(stateDir, "daemon.json"), "utf8"))
      const token = fs.readFileSync(path.join(stateDir, "token"), "utf8").trim()
      if (info.pid === child.pid) {
        const daemon = { url: info.url.replace(/\/+$/, ""), token, child, stderrFile }
        const res = await request(daemon, "GET", "/v1/status")
        if (res.status === 200) return daemon
      }
    } catch {}
    await new Promise((r) => setTimeout(r, 25)) // polling a condition under a deadline
  }
  child.kill("SIGKILL")
  throw new Error(`daemon not ready in 30 s: ${fs.readFileSync(stderrFile, "utf8")}`)
}

export async function stopDaemon(daemon) {
  if (!daemon || daemon.child.exitCode !== null || daemon.child.signalCode !== null) return
  const gone = new Promise((r) => daemon.child.once("exit", r))
  daemon.child.kill("SIGKILL")
  await gone
}

export function hookSubcommandProblem() {
  const r = spawnSync(BIN, ["hook", "--help"], { encoding: "utf8", timeout: 10000 })
  if (r.status === 0) return null
  return `\`filewatchd hook\` is not in ${BIN} yet (\`hook --help\` exited ${r.status}: ${(r.stderr || "").trim().split("\n")[0]}); rebuild with \`cargo build\``
}

export function changeSummary(turn) {
  return turn.changes
    .map((c) => (c.from ? `${c.change} ${c.from} -> ${c.path}` : `${c.change} ${c.path}`))
    .sort()
}
