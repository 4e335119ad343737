// Screenshots of the review page for the README: `node tests/ui/screenshots.mjs` (after
// `cargo build` and `npm ci` in tests/ui) writes docs/ui/{timeline,turn,plan,blame}.png from a
// fresh daemon in a temporary workspace whose turns are made by bash. FILEWATCHD_BIN and
// FILEWATCHD_CHROMIUM choose the binaries (default: target/debug/filewatchd, /usr/bin/chromium).
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.FILEWATCHD_BIN ?? path.join(repo, "target/debug/filewatchd");
const out = path.join(repo, "docs/ui");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "filewatchd-shots-"));
const root = path.join(tmp, "project");
const state = path.join(tmp, "state");
fs.mkdirSync(root);
const env = { ...process.env, FILEWATCHD_HOME: path.join(tmp, "home"), NO_COLOR: "1" };
const cli = (...args) => execFileSync(bin, ["--state-dir", state, ...args], { cwd: root, env, encoding: "utf8" });

const daemon = spawn(bin, ["serve", "--root", root, "--state-dir", state], { env, stdio: "ignore" });
try {
  const deadline = Date.now() + 20_000;
  // `status` answers during the first index too: wait for the daemon's URL as well.
  const ready = () => {
    try { cli("status"); return fs.existsSync(path.join(state, "daemon.json")); } catch { return false; }
  };
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("the daemon did not answer within 20 s");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const turn = (label, script) => cli("exec", "--session", "demo", "--label", label, "--", "bash", "-c", script);
  turn("add a login form", "mkdir -p src; printf 'fn main() {\\n    println!(\"hi\");\\n}\\n' > src/main.rs; printf '# demo\\n' > README.md");
  turn("validate the password\nand show an error", "sed -i 's/hi/login: ok/' src/main.rs; printf 'fn check(p: &str) -> bool {\\n    p.len() >= 12\\n}\\n' > src/check.rs");
  turn("write the docs", "printf '# demo\\n\\nLog in with your password.\\n' > README.md");
  fs.writeFileSync(path.join(root, "README.md"), "# demo\n\nMy own words.\n");
  const url = cli("ui", "--print-url").trim();

  fs.mkdirSync(out, { recursive: true });
  const browser = await chromium.launch({ executablePath: process.env.FILEWATCHD_CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  const page = await browser.newPage({ viewport: { width: 1200, height: 720 } });
  await page.goto(url);
  await page.locator("button.entry.turn").first().waitFor();
  await page.screenshot({ path: path.join(out, "timeline.png") });
  await page.locator('button[data-turn="demo/2"]').click();
  await page.locator('button.file[data-path="src/main.rs"]').click();
  await page.locator("#versions li").first().waitFor();
  await page.screenshot({ path: path.join(out, "turn.png") });
  const blame = page.locator("table.blame");
  if (await blame.count()) await blame.screenshot({ path: path.join(out, "blame.png") });
  await page.locator('button[data-turn="demo/1"]').click();
  await page.getByRole("button", { name: "Roll back to here" }).click();
  await page.locator("dialog#plan section.conflicts").waitFor();
  await page.screenshot({ path: path.join(out, "plan.png") });
  await browser.close();
  console.log(`wrote ${fs.readdirSync(out).join(", ")} in ${out}`);
} finally {
  daemon.kill("SIGTERM");
}
