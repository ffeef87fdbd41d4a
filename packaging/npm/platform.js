// Which of ralph-hooks' per-platform npm packages fits this machine, where
// npm put it, and whether it is the one this package was built with. Shared
// by postinstall.js and the launchers in bin/.
//
// The platform package is found by name (`require.resolve` from this
// folder up), so whatever package of that name sits in a node_modules above
// us, or comes from a registry where someone else holds the name, would be
// found. Only one whose version is ours and whose binaries have the sha256
// .ci/dist recorded in our package.json is used.
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const manifest = require("./package.json");

// Set by .ci/dist: {"<os>-<cpu>[-<libc>]": "<package name>"}, best first.
const PLATFORMS = manifest.ralphHooksPlatforms || {};
// Set by .ci/dist: {"<package name>": {"<binary>": "<sha256 hex>"}}.
const CHECKSUMS = manifest.ralphHooksSha256 || {};

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

/// Why the package `name` found in `dir` is not ours, or null.
function notOurs(name, dir) {
  let version;
  try {
    version = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
  } catch (error) {
    return `cannot read ${path.join(dir, "package.json")} (${error.message})`;
  }
  if (version !== manifest.version) {
    return `${dir} is ${name} ${version}, not ${manifest.version} as this ralph-hooks needs`;
  }
  if (!CHECKSUMS[name]) {
    return `this ralph-hooks package carries no checksums for ${name}`;
  }
  return null;
}

/// {dir, checksums} of the installed platform package, or {why} there is none
/// to trust.
function platformPackage() {
  const libc = process.platform === "linux" ? (isMusl() ? "musl" : "glibc") : "";
  const keys = [`${process.platform}-${process.arch}-${libc}`, `${process.platform}-${process.arch}`];
  const candidates = keys.map((key) => PLATFORMS[key]).filter(Boolean);
  if (candidates.length === 0) {
    const built = Object.keys(PLATFORMS).join(", ") || "none";
    return { why: `no ralph-hooks binaries for ${keys[0]} (this version has: ${built})` };
  }
  const refused = [];
  for (const name of candidates) {
    let dir;
    try {
      // From this package's folder up: nested node_modules first, then the
      // folder npm installs global packages side by side in.
      dir = path.dirname(require.resolve(`${name}/package.json`, { paths: [__dirname] }));
    } catch (_) {
      continue;
    }
    const why = notOurs(name, dir);
    if (why) {
      refused.push(why);
      continue;
    }
    return { dir, checksums: CHECKSUMS[name] };
  }
  if (refused.length > 0) {
    return { why: `refused the platform package: ${refused.join("; ")}` };
  }
  return { why: `the platform package ${candidates.join(" or ")} is not installed (optional dependencies disabled?)` };
}

/// Why `file` is not the binary `name` this package was built with, or null.
function notTheBuiltBinary(file, name, checksums) {
  const expected = checksums[name];
  if (!expected) {
    return `no checksum for ${name}`;
  }
  let actual;
  try {
    actual = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
  } catch (error) {
    return `cannot read ${file} (${error.message})`;
  }
  if (actual !== expected) {
    return `${file} is not the ${name} this ralph-hooks was built with (sha256 ${actual.slice(0, 16)}…, expected ${expected.slice(0, 16)}…)`;
  }
  return null;
}

module.exports = { platformPackage, binaryNames, notTheBuiltBinary };
