#!/usr/bin/env node
// ralph-hooks' npm postinstall: replaces each `bin/<name>` launcher of this
// package with a hard link to (or, across file systems or owners, a copy of)
// the native executable from the platform package that npm installed as an
// optional dependency. Afterwards the commands npm put on PATH are the native
// binaries themselves, so a Claude Code hook never starts a node process.
//
// A platform package of another version, or a binary whose sha256 is not the
// one recorded at build time, is refused (platform.js): a command is never
// linked to a program this package was not built with. The link or copy is
// checked after it is made, so the file cannot change between check and use.
//
// When no platform package fits this machine, one is refused, or linking
// fails, the launchers stay: they run the native binary through node (after
// the same check) or say why they cannot. This script never fails the install.
"use strict";

const fs = require("fs");
const path = require("path");
const { platformPackage, binaryNames, notTheBuiltBinary } = require("./platform.js");

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
      // A hard link shares the file with its owner: only to a file of ours.
      let linked = false;
      if (typeof process.getuid === "function" && fs.statSync(native).uid === process.getuid()) {
        try {
          fs.linkSync(native, temporary);
          linked = true;
        } catch (_) {}
      }
      if (!linked) {
        fs.copyFileSync(native, temporary);
        fs.chmodSync(temporary, 0o755);
      }
      const why = notTheBuiltBinary(temporary, name, found.checksums);
      if (why) {
        throw new Error(`refused: ${why}`);
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
