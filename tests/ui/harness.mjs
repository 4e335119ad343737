// What the browser tests share: the daemon's API with the bearer token (the tests' own checks,
// never the page's), polling a condition with a deadline, and Chromium.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

export const env = process.env;

/** The daemon's API with the bearer token. */
export async function api(method, p, body) {
  const headers = { Authorization: `Bearer ${env.FILEWATCHD_UI_TOKEN}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const reply = await fetch(env.FILEWATCHD_UI_API + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: reply.status, data: await reply.json().catch(() => null) };
}

/** Polls `probe` until it is true, for at most 10 s. */
export async function poll(what, probe) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The system's headless Chromium. */
export function launch() {
  return chromium.launch({ executablePath: env.FILEWATCHD_CHROMIUM, args: ["--no-sandbox"] });
}
