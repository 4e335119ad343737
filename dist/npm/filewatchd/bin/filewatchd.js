#!/usr/bin/env node
// The `filewatchd` command of the npm package: runs the binary that the platform's package
// (@filewatchd/linux-x64, @filewatchd/linux-arm64, @filewatchd/win32-x64: optional
// dependencies, of which npm installs only the one matching this machine's os and cpu) holds,
// with the same arguments, standard streams and exit status.
"use strict";

const { spawnSync } = require("node:child_process");
const path = require("node:path");

const platform = `${process.platform}-${process.arch}`;
const pkg = `@filewatchd/${platform}`;

function binary() {
  try {
    const exe = process.platform === "win32" ? "filewatchd.exe" : "filewatchd";
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", exe);
  } catch {
    const supported = ["linux-x64", "linux-arm64", "win32-x64"];
    const why = supported.includes(platform)
      ? `its package ${pkg} is not installed (npm skips optional dependencies with --no-optional or --omit=optional: reinstall without)`
      : `filewatchd has no binary for ${platform} yet (there are: ${supported.join(", ")})`;
    process.stderr.write(`filewatchd: ${why}\n`);
    process.exit(1);
  }
}

const result = spawnSync(binary(), process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  process.stderr.write(`filewatchd: cannot run ${result.error.path || "the binary"}: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) {
  // Die of the same signal, so a shell sees what the binary's caller would have seen.
  process.kill(process.pid, result.signal);
}
process.exit(result.status ?? 1);
