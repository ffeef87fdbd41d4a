// Which of ralph-hooks' per-platform npm packages fits this machine, and
// where npm put it. Shared by postinstall.js and the launchers in bin/.
"use strict";

const path = require("path");
const manifest = require("./package.json");

// Set by .ci/dist: {"<os>-<cpu>[-<libc>]": "<package name>"}, best first.
const PLATFORMS = manifest.ralphHooksPlatforms || {};

function isMusl() {
  try {
    return !process.report.getReport().header.glibcVersionRuntime;
  } catch (_) {
    return false;
  }
}

function binaryNames() {
  return Object.keys(manifest.bin || {});
}

/// {dir} of the installed platform package, or {why} there is none.
function platformPackage() {
  const libc = process.platform === "linux" ? (isMusl() ? "musl" : "glibc") : "";
  const keys = [`${process.platform}-${process.arch}-${libc}`, `${process.platform}-${process.arch}`];
  const candidates = keys.map((key) => PLATFORMS[key]).filter(Boolean);
  if (candidates.length === 0) {
    const built = Object.keys(PLATFORMS).join(", ") || "none";
    return { why: `no ralph-hooks binaries for ${keys[0]} (this version has: ${built})` };
  }
  for (const name of candidates) {
    try {
      // From this package's folder up: nested node_modules first, then the
      // folder npm installs global packages side by side in.
      const found = require.resolve(`${name}/package.json`, { paths: [__dirname] });
      return { dir: path.dirname(found) };
    } catch (_) {}
  }
  return { why: `the platform package ${candidates.join(" or ")} is not installed (optional dependencies disabled?)` };
}

module.exports = { platformPackage, binaryNames };
