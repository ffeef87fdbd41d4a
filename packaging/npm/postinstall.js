#!/usr/bin/env node
// ralph-hooks' npm postinstall: replaces each `bin/<name>` launcher of this
// package with a hard link to (or, across file systems, a copy of) the native
// executable from the platform package that npm installed as an optional
// dependency. Afterwards the commands npm put on PATH are the native binaries
// themselves, so a Claude Code hook never starts a node process.
//
// When no platform package fits this machine, or linking fails, the launchers
// stay: they run the native binary through node (slower, but working) or say
// which platform is missing. This script never fails the install.
"use strict";

const fs = require("fs");
const path = require("path");
const { platformPackage, binaryNames } = require("./platform.js");

function main() {
  const found = platformPackage();
  if (!found.dir) {
    console.warn(`ralph-hooks: ${found.why}; the commands stay node launchers`);
    return;
  }
  for (const name of binaryNames()) {
    const native = path.join(found.dir, "bin", name);
    const launcher = path.join(__dirname, "bin", name);
    const temporary = `${launcher}.native-${process.pid}`;
    try {
      try {
        fs.linkSync(native, temporary);
      } catch (_) {
        fs.copyFileSync(native, temporary);
        fs.chmodSync(temporary, 0o755);
      }
      // The rename is atomic: a concurrent caller sees the launcher or the binary.
      fs.renameSync(temporary, launcher);
    } catch (error) {
      try {
        fs.unlinkSync(temporary);
      } catch (_) {}
      console.warn(`ralph-hooks: could not link ${native} over ${launcher} (${error.message}); it stays a node launcher`);
    }
  }
}

try {
  main();
} catch (error) {
  console.warn(`ralph-hooks: postinstall: ${error.message}; the commands stay node launchers`);
}
