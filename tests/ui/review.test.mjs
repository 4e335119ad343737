// The review page in headless Chromium (tests/ui_browser.rs starts this with a daemon whose
// session s1 has three turns made by bash: 1 "write the notes", 2 "edit the notes", 3 "touch up
// the readme", with scratch.txt written outside any turn between 2 and 3), session s2 one turn of its own, and session s3 one turn that adds 600 files; the last test adds session s4. The tests run in order and share one logged-in browser.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { env, api, poll, launch } from "./harness.mjs";

const root = env.FILEWATCHD_UI_ROOT;
const daemonUrl = env.FILEWATCHD_UI_API;
let browser;
let context;
let page;

/** The review API answers (it is part of this build: a 404 or 405 here is a failure). */
const answers = (reply, what) => assert.ok(reply.status === 200, `${what} answered ${reply.status}`);

async function openTurn(n) {
  await page.locator(`button[data-turn="s1/${n}"]`).click();
  await page.getByRole("heading", { name: `Turn ${n} of s1` }).waitFor();
}

before(async () => {
  browser = await launch();
  context = await browser.newContext();
  page = await context.newPage();
});

after(async () => {
  await browser?.close();
});

test("the login link opens the timeline of the bash turns, once", async () => {
  await page.goto(env.FILEWATCHD_UI_LOGIN_URL);
  assert.equal(new URL(page.url()).pathname, "/ui/");
  const turns = page.locator("button.entry.turn");
  await turns.first().waitFor();
  assert.equal(await turns.count(), 5);
  const timeline = await page.locator("#timeline").textContent();
  for (const prompt of ["write the notes", "edit the notes", "touch up the readme"]) {
    assert.ok(timeline.includes(prompt), `${prompt} in ${timeline}`);
  }
  assert.ok(!timeline.includes("and add a file"), "only a label's first line is the prompt");
  const stranger = await (await browser.newContext()).newPage();
  const again = await stranger.goto(env.FILEWATCHD_UI_LOGIN_URL);
  assert.equal(again.status(), 403);
  assert.ok((await stranger.textContent("body")).includes("filewatchd ui"));
});

test("a write outside any turn is shown between the turns it came between", async () => {
  const order = await page.locator("#timeline ol.entries > li").evaluateAll((items) => items.map((li) => {
    const turn = li.querySelector("[data-turn]");
    return turn ? turn.dataset.turn : li.querySelector(".entry").dataset.kind || "other";
  }));
  const at = order.indexOf("outside");
  assert.ok(at > 0, `an outside entry in ${order}`);
  assert.deepEqual(order.slice(at - 1, at + 2), ["s1/3", "outside", "s1/2"], `${order}`);
  const text = await page.locator("#timeline .entry.outside").textContent();
  assert.ok(text.includes("you / an editor") && text.includes("1 path") && text.includes("+1 added"), text);
});

test("a turn shows its files, its diff on demand, and j/k move between turns", async () => {
  await openTurn(2);
  const paths = await page.locator("button.file").evaluateAll((bs) => bs.map((b) => b.dataset.path).sort());
  assert.deepEqual(paths, ["extra.txt", "notes.txt"]);
  assert.equal(await page.locator(".diff").count(), 0, "no diff before it is asked for");
  await page.locator('button.file[data-path="notes.txt"]').click();
  const diff = await page.locator(".diff").textContent();
  assert.ok(diff.includes("-two") && diff.includes("+TWO"), diff);
  await page.keyboard.press("j");
  await page.getByRole("heading", { name: "Turn 1 of s1" }).waitFor();
  await page.keyboard.press("k");
  await page.getByRole("heading", { name: "Turn 2 of s1" }).waitFor();
  await page.keyboard.press("n");
  await page.locator("#file h3").waitFor();
});

test("side by side shows a modified file in two columns, is remembered, and falls back to unified when narrow", async () => {
  await openTurn(2);
  await page.locator('button.file[data-path="notes.txt"]').click();
  await page.getByRole("button", { name: "Side by side" }).click();
  const row = page.locator("table.split-hunk tr", { has: page.locator("td.old.del") });
  assert.deepEqual(await row.locator("td").allTextContents(), ["two", "TWO"]);
  assert.ok((await page.locator("td.new.add").first().boundingBox()).x > (await page.locator("td.old.del").first().boundingBox()).x + 100);
  await page.reload();
  await openTurn(2);
  await page.locator('button.file[data-path="notes.txt"]').click();
  await page.locator("table.split-hunk").waitFor();
  assert.equal(await page.getByRole("button", { name: "Side by side" }).getAttribute("aria-pressed"), "true");
  const wide = page.viewportSize();
  await page.setViewportSize({ width: 600, height: wide.height });
  await page.locator("table.split-hunk").waitFor({ state: "detached" });
  assert.ok((await page.locator(".diff").textContent()).includes("+TWO"));
  await page.setViewportSize(wide);
  await page.locator("table.split-hunk").waitFor();
  await page.getByRole("button", { name: "Unified" }).click();
  await page.locator("table.split-hunk").waitFor({ state: "detached" });
});

test("a turn of 600 files shows 200 at a time; n/p move over the shown ones", async () => {
  await page.locator('button[data-turn="s3/1"]').click();
  await page.getByRole("heading", { name: "Turn 1 of s3" }).waitFor();
  const files = page.locator("button.file");
  assert.equal(await files.count(), 200);
  const more = page.locator("button.more-files");
  assert.equal(await more.textContent(), "Show 200 more (400 not shown)");
  await page.locator("button.file").last().click();
  await page.keyboard.press("n");
  await page.locator("button.file.selected").nth(0).waitFor();
  assert.equal(await page.locator("button.file").last().getAttribute("class"), "file selected", "n stops at the last shown file");
  await more.click();
  assert.equal(await files.count(), 400);
  await page.locator("button.more-files").click();
  assert.equal(await files.count(), 600);
  assert.equal(await page.locator("button.more-files").count(), 0);
  await page.keyboard.press("n");
  await poll("n reaches the newly shown files", async () => (await page.locator("button.file").nth(200).getAttribute("class")) === "file selected");
});

test("mark a turn reviewed, then show only turns not reviewed yet", async () => {
  const probe = await api("PUT", "/v1/sessions/s1/turns/1/review", { reviewed: false });
  answers(probe, "PUT .../review");
  await openTurn(1);
  await page.getByRole("button", { name: "Mark reviewed" }).click();
  await page.locator('button[data-turn="s1/1"] .mark.reviewed').waitFor();
  await page.getByLabel("not reviewed yet").check();
  await page.locator('button[data-turn="s1/1"]').waitFor({ state: "detached" });
  assert.equal(await page.locator('button[data-turn="s1/2"]').count(), 1);
  await page.getByLabel("not reviewed yet").uncheck();
  await page.locator('button[data-turn="s1/1"]').waitFor();
});

test("blame of a file names the turns of its lines", async () => {
  const probe = await api("GET", "/v1/blame?path=notes.txt");
  answers(probe, "GET /v1/blame");
  await openTurn(2);
  await page.locator('button.file[data-path="notes.txt"]').click();
  const blame = await page.locator("table.blame").textContent();
  assert.ok(blame.includes("TWO") && blame.includes("s1/2") && blame.includes("s1/1"), blame);
});

test("revert one hunk of a turn after its plan", async () => {
  const probe = await api("POST", "/v1/sessions/s1/turns/2/revert", { path: "notes.txt", hunk: 0, dry_run: true });
  answers(probe, "POST .../revert (dry run)");
  await openTurn(2);
  await page.locator('button.file[data-path="notes.txt"]').click();
  await page.getByRole("button", { name: "Revert hunk" }).first().click();
  const dialog = page.locator("dialog#plan");
  await dialog.getByRole("button", { name: "Apply", exact: true }).click();
  await page.locator("#message.ok").waitFor();
  assert.equal(fs.readFileSync(path.join(root, "notes.txt"), "utf8"), "one\ntwo\nthree\n");
});

test("undo a turn whose file the user edited since: the plan shows the conflict, skip keeps it", async () => {
  const readme = path.join(root, "readme.md");
  fs.writeFileSync(readme, "hello\nmore\nmine\n");
  await poll("the user's edit recorded", async () => {
    const history = await api("GET", "/v1/history?path=readme.md");
    return history.data.versions.some((v) => v.origin === "outside");
  });
  await openTurn(3);
  const undoAnswer = (dryRun) => page.waitForResponse((r) => r.url().endsWith("/v1/sessions/s1/undo") &&
    JSON.parse(r.request().postData()).dry_run === dryRun);
  const [planned] = await Promise.all([undoAnswer(true), page.getByRole("button", { name: "Undo turn" }).click()]);
  const plan = await planned.json();
  const dialog = page.locator("dialog#plan");
  // A conflict in the CLI's words: the path and why, not the answer's code.
  const conflicts = await dialog.locator("section.conflicts li").allTextContents();
  assert.deepEqual(conflicts, plan.conflicts.map((c) => `${c.path}: ${c.reason}`));
  assert.ok(conflicts.some((c) => c.startsWith("readme.md: ")), `${conflicts}`);
  assert.ok(conflicts.every((c, i) => !c.includes(plan.conflicts[i].code)), `${conflicts}`);
  assert.ok((await dialog.textContent()).includes("counter.txt"));
  const [applied] = await Promise.all([undoAnswer(undefined), dialog.getByRole("button", { name: "Skip conflicts" }).click()]);
  const done = await applied.json();
  // The counts are the rollback's own: the paths it changed (not every path it planned: the
  // skipped ones are among those) and those it skipped.
  const changed = done.actions.filter((a) => a.status === "done").length;
  assert.ok(changed >= 1 && changed < done.actions.length && done.skipped.length >= 1, JSON.stringify(done.actions.slice(0, 3)));
  await page.locator("#message.ok").waitFor();
  assert.equal(await page.locator("#message").textContent(), `Undo turn: done (${changed} changed, ${done.skipped.length} skipped).`);
  const logged = (await api("GET", "/v1/timeline?session=s1")).data.entries.find((e) => e.rollback_id === done.rollback_id);
  assert.equal(logged.counts.added + logged.counts.modified + logged.counts.deleted, changed);
  assert.equal(logged.counts.skipped, done.skipped.length);
  assert.equal(fs.readFileSync(readme, "utf8"), "hello\nmore\nmine\n");
  assert.equal(fs.existsSync(path.join(root, "counter.txt")), false);
  await page.locator('button[data-turn="s1/3"] .mark.undone').waitFor();
});

test("a page served from another port can neither read nor act", async () => {
  const entries = (await api("GET", "/v1/timeline")).data.entries.length;
  const files = fs.readdirSync(root).sort();
  const form = `<!doctype html><form id="f" method="POST" enctype="text/plain" action="${daemonUrl}/v1/sessions/s1/redo">` +
    `<input name='{"on_conflict":"force","x":"' value='"}'></form>`;
  const server = http.createServer((_, res) => res.writeHead(200, { "Content-Type": "text/html" }).end(form));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const evil = await context.newPage();
    await evil.goto(`http://127.0.0.1:${server.address().port}/`);
    const read = await evil.evaluate(async (u) => {
      try {
        const reply = await fetch(`${u}/v1/timeline`, { credentials: "include" });
        return `read ${reply.status}`;
      } catch (_) {
        return "blocked";
      }
    }, daemonUrl);
    assert.equal(read, "blocked");
    await evil.evaluate(async (u) => {
      const body = JSON.stringify({ on_conflict: "force" });
      await fetch(`${u}/v1/sessions/s1/redo`, { method: "POST", mode: "no-cors", credentials: "include", body }).catch(() => null);
    }, daemonUrl);
    const [answer] = await Promise.all([evil.waitForNavigation(), evil.evaluate(() => document.getElementById("f").submit())]);
    assert.equal(answer.status(), 403);
    assert.ok(!(await evil.content()).includes(env.FILEWATCHD_UI_TOKEN));
  } finally {
    server.close();
  }
  assert.equal((await api("GET", "/v1/timeline")).data.entries.length, entries, "nothing was done");
  assert.deepEqual(fs.readdirSync(root).sort(), files);
});

test("a narrow window stacks the timeline over the turn; dark follows the system", async () => {
  const narrow = await browser.newContext({ viewport: { width: 420, height: 800 }, colorScheme: "dark" });
  try {
    const code = await api("POST", "/v1/ui/login", {});
    const small = await narrow.newPage();
    await small.goto(code.data.url);
    await small.locator("button.entry.turn").first().waitFor();
    const timeline = await small.locator("#timeline").boundingBox();
    const detail = await small.locator("#detail").boundingBox();
    assert.ok(detail.y >= timeline.y + timeline.height, "the turn is below the timeline");
    assert.ok(timeline.width > 300, "the timeline takes the window's width");
    const background = await small.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(background, "rgb(13, 17, 23)");
  } finally {
    await narrow.close();
  }
  const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(light, "rgb(255, 255, 255)");
});

test("the sessions list names the session and narrows the timeline to it", async () => {
  await page.reload();
  const session = page.locator('button.session[data-session="s1"]');
  assert.ok((await session.textContent()).includes("write the notes"));
  // The sessions list and the timeline load apart: the timeline may come second.
  await poll("the timeline of every session", async () => (await page.locator("button.entry.turn").count()) === 5);
  await session.click();
  await page.locator('button.session[aria-pressed="true"]').waitFor();
  await poll("the timeline of s1 alone", async () => (await page.locator("button.entry.turn").count()) === 3);
  assert.equal(await page.locator('button[data-turn="s2/1"]').count(), 0);
});

test("bidi and other invisible controls in names, prompts and lines are shown, never obeyed", async () => {
  // `bidi\u202etxt.exe` was shown as `bidiexe.txt`.
  const name = "bidi\u202etxt.exe";
  const started = await api("POST", "/v1/sessions/s4/turns", { label: "prompt \u2066isolated\u2069 \u202ereversed" });
  assert.equal(started.status, 201, JSON.stringify(started.data));
  fs.writeFileSync(path.join(root, name), "a line \u202ereversed\u0007\n");
  answers(await api("POST", "/v1/sessions/s4/turns/current/end", {}), "turn end");
  await page.goto(new URL("/ui/", page.url()).href);
  await page.locator('button[data-turn="s4/1"]').click();
  await page.getByRole("heading", { name: "Turn 1 of s4" }).waitFor();
  await page.locator("button.file").first().click();
  await page.locator(".diff").waitFor();
  const shown = await page.evaluate(() => document.body.innerText);
  const raw = shown.match(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
  assert.equal(raw, null, `a raw control ${raw && escape(raw[0])} is on the page`);
  for (const escaped of ["bidi\\u{202e}txt.exe", "\\u{2066}isolated\\u{2069}", "reversed\\u{7}"]) {
    assert.ok(shown.includes(escaped), `${escaped} is not shown`);
  }
});
