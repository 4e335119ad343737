// Where the review page is and the words it uses, in headless Chromium (tests/ui_browser.rs,
// `the_review_page_keeps_its_place_and_speaks_as_the_cli`, starts this with a daemon whose
// session s1 has 30 turns (turn 1 writes the indented code.py, turn 30 is undone), s2 two turns
// and s3 one, the workspace rolled back to a pin and redone, and log.txt restored to a seq).
// The tests run in order and share one logged-in browser 1280 px wide.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { env, api, poll, launch } from "./harness.mjs";

let browser;
let context;
let page;

before(async () => {
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  await page.goto(env.FILEWATCHD_UI_LOGIN_URL);
  await page.locator('button[data-turn="s1/1"]').waitFor();
});

after(async () => {
  await browser?.close();
});

/** The page with nothing open: the URL the login leads to. */
const home = () => new URL("/ui/", page.url()).href;

/** A page of a new browser window (a context of its own, logged in with a code of its own). */
async function newWindow(options) {
  const ctx = await browser.newContext(options);
  const code = await api("POST", "/v1/ui/login", {});
  const tab = await ctx.newPage();
  await tab.goto(code.data.url);
  return { ctx, tab };
}

/** Whether `locator` lies within its page's viewport. */
async function inView(locator, viewport) {
  const box = await locator.boundingBox();
  return box !== null && box.y >= 0 && box.y + box.height <= viewport.height;
}

/** `filewatchd log --all` of this workspace, without colour: what the terminal shows. */
function cliLog() {
  const args = ["log", "--all", "--no-pager", "--state-dir", env.FILEWATCHD_UI_STATE];
  const childEnv = { ...process.env, NO_COLOR: "1", FILEWATCHD_HOME: env.FILEWATCHD_UI_HOME, FILEWATCHD_AUTOSTART: "0" };
  return execFileSync(env.FILEWATCHD_UI_BIN, args, { cwd: env.FILEWATCHD_UI_ROOT, env: childEnv, encoding: "utf8" });
}

const oneSpaced = (text) => text.replace(/\s+/g, " ").trim();

test("the timeline names each undo, redo, rollback and restore in the words of `log`", async () => {
  // `2026-12-02 06:40:01+00:00  undo #1 of s1  to before turn 30: +0 ~1 -0`: the time, the
  // entry, whose (the page says it beside), where it went and what it changed.
  const said = new Map();
  for (const line of cliLog().split("\n")) {
    const entry = line.replace(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d\d:\d\d\s+/, "");
    const m = entry.match(/^(undo|redo|rollback|time rollback|restore) #(\d+)(?: of \S+)?\s\s(.*)$/);
    if (m) said.set(m[2], { kind: m[1], words: oneSpaced(`${m[1]} #${m[2]} ${m[3]}`) });
  }
  assert.deepEqual([...said.values()].map((s) => s.kind).sort(), ["redo", "restore", "time rollback", "undo"], cliLog());
  for (const [id, { words }] of said) {
    const shown = await page.locator(`#timeline [data-rollback="${id}"] .what`).textContent();
    assert.equal(oneSpaced(shown), words);
  }
});

test("a session's turns are counted in words: 1 turn, 30 turns", async () => {
  const meta = (s) => page.locator(`button.session[data-session="${s}"] .meta`).textContent();
  assert.ok((await meta("s3")).startsWith("1 turn · "), await meta("s3"));
  assert.ok((await meta("s1")).startsWith("30 turns · "), await meta("s1"));
});

test("an older turn's details are in view after a click, 1280 px and 400 px wide", async () => {
  for (const width of [1280, 400]) {
    const viewport = { width, height: 800 };
    const { ctx, tab } = await newWindow({ viewport });
    try {
      const oldest = tab.locator('button[data-turn="s1/1"]');
      await oldest.scrollIntoViewIfNeeded();
      assert.ok(await tab.evaluate(() => window.scrollY > 0), `the timeline is longer than the window at ${width} px`);
      await oldest.click();
      const heading = tab.getByRole("heading", { name: "Turn 1 of s1" });
      await heading.waitFor();
      await poll(`the turn's details in view at ${width} px`, () => inView(heading, viewport));
      await poll(`its files in view at ${width} px`, () => inView(tab.locator('button.file[data-path="code.py"]'), viewport));
    } finally {
      await ctx.close();
    }
  }
});

test("choosing one session closes another session's open turn, and keeps one of its own", async () => {
  await page.goto(home());
  await page.locator('button[data-turn="s3/1"]').click();
  const other = page.getByRole("heading", { name: "Turn 1 of s3" });
  await other.waitFor();
  await page.locator('button.session[data-session="s1"]').click();
  await page.locator('button.session[data-session="s1"][aria-pressed="true"]').waitFor();
  await other.waitFor({ state: "detached" });
  await page.locator('button[data-turn="s1/2"]').click();
  await page.getByRole("heading", { name: "Turn 2 of s1" }).waitFor();
  await page.locator('button.session[data-session="s1"]').click();
  await page.locator('button.session[aria-pressed="true"]').waitFor({ state: "detached" });
  await page.locator('button[data-turn="s3/1"]').waitFor();
  assert.equal(await page.getByRole("heading", { name: "Turn 2 of s1" }).count(), 1, "the turn of the session chosen stays open");
});

/** The URL holds the view and never the CSRF token: no fragment, no `t`. */
function assertShareable(url) {
  const u = new URL(url);
  assert.equal(u.hash, "", url);
  assert.equal(u.searchParams.get("t"), null, url);
}

let fileUrl;

test("a reload and the back button restore the view from the URL", async () => {
  await page.goto(home());
  await page.locator('button[data-turn="s1/1"]').click();
  const turn = page.getByRole("heading", { name: "Turn 1 of s1" });
  await turn.waitFor();
  const turnUrl = page.url();
  assert.deepEqual(Object.fromEntries(new URL(turnUrl).searchParams), { session: "s1", turn: "1" });
  await page.locator('button.file[data-path="code.py"]').click();
  await page.locator("#file h3", { hasText: "code.py" }).waitFor();
  fileUrl = page.url();
  assert.equal(new URL(fileUrl).searchParams.get("file"), "code.py");
  await page.reload();
  await turn.waitFor();
  await page.locator("#file h3", { hasText: "code.py" }).waitFor();
  await page.locator("#file .diff").waitFor();
  await page.goBack();
  assert.equal(page.url(), turnUrl);
  await page.locator("#file h3").waitFor({ state: "detached" });
  assert.equal(await turn.count(), 1, "back from a file is its turn");
  await page.goBack();
  assert.equal(page.url(), home());
  await turn.waitFor({ state: "detached" });
  await page.goForward();
  await turn.waitFor();
  for (const url of [turnUrl, fileUrl, page.url()]) assertShareable(url);
});

test("a second tab opened on a view's URL shows the same view", async () => {
  const tab = await context.newPage();
  try {
    await tab.goto(fileUrl);
    await tab.getByRole("heading", { name: "Turn 1 of s1" }).waitFor();
    await tab.locator("#file h3", { hasText: "code.py" }).waitFor();
    await tab.locator("table.blame").waitFor();
  } finally {
    await tab.close();
  }
});

/** The lines of the blame shown, as rendered (innerText: what the eye sees, spaces included). */
const blameLines = (p) => p.locator("table.blame td code").evaluateAll((cells) => cells.map((c) => c.innerText.replace(/\n$/, "")));

test("blame keeps each line's leading indentation, and has a URL of its own", async () => {
  await page.goto(fileUrl);
  await page.locator("table.blame").waitFor();
  const lines = ["def f():", "    return 1", "\tif x:", "\t\tpass"];
  assert.deepEqual(await blameLines(page), lines);
  await page.getByRole("link", { name: "(on a page of its own)" }).click();
  await page.getByRole("heading", { name: "Blame of code.py" }).waitFor();
  assert.equal(new URL(page.url()).searchParams.get("blame"), "code.py");
  assertShareable(page.url());
  const tab = await context.newPage();
  try {
    await tab.goto(page.url());
    await tab.locator("table.blame").waitFor();
    assert.deepEqual(await blameLines(tab), lines);
  } finally {
    await tab.close();
  }
  await page.locator("table.blame a", { hasText: "s1/1" }).first().click();
  await page.getByRole("heading", { name: "Turn 1 of s1" }).waitFor();
  await page.goBack();
  await page.getByRole("heading", { name: "Blame of code.py" }).waitFor();
});

test("at 400 px an open file, its versions and its blame fit the window, and no load fails", async () => {
  const failed = [];
  const { ctx, tab } = await newWindow({ viewport: { width: 400, height: 800 } });
  tab.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`); });
  tab.on("console", (m) => { if (m.type() === "error") failed.push(m.text()); });
  try {
    // lone.txt is one line of 400 characters with no space to break at.
    const wide = new URL(fileUrl);
    wide.search = new URLSearchParams({ session: "s3", turn: "1", file: "lone.txt" }).toString();
    await tab.goto(wide.href);
    await tab.locator("#file .diff").waitFor();
    await tab.locator("#versions ol").waitFor();
    await tab.locator("#blame table.blame").waitFor();
    const width = await tab.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 400, `the page is ${width} px wide at 400 px`);
    // Blame's prompt column keeps each prompt's start on one line.
    const tall = await tab.locator("table.blame td.meta").evaluateAll((cells) =>
      cells.filter((c) => c.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(c).lineHeight || "16")).length);
    assert.equal(tall, 0, "a blame column wraps");
    await tab.locator('button[data-turn="s1/1"]').waitFor();
    assert.deepEqual(failed, []);
  } finally {
    await ctx.close();
  }
});

test("the plan dialog names its boundary and keeps its buttons above the list", async () => {
  await page.goto(home());
  await page.locator('button[data-turn="s2/2"]').click();
  await page.getByRole("heading", { name: "Turn 2 of s2" }).waitFor();
  await page.getByRole("button", { name: "Undo turn" }).click();
  const dialog = page.locator("dialog#plan");
  await dialog.locator("p.boundary").waitFor();
  assert.match(await dialog.locator("p.boundary").textContent(), /^Back to before turn 2 of session s2\./);
  const buttons = await dialog.locator(".actions").boundingBox();
  const lists = await dialog.locator(".plan-lists").boundingBox();
  assert.ok(buttons.y < lists.y, "the buttons come after the list");
  await dialog.getByRole("button", { name: "Cancel" }).click();
});
