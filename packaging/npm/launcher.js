#!/usr/bin/env node
// The stand-in for a ralph-hooks command until postinstall.js links the
// native binary over it: it runs the native binary from the platform package
// (paying for a node start on every call) once it is the binary this package
// was built with (platform.js), or says why it cannot.
"use strict";

const path = require("path");
const { spawnSync } = require("child_process");
const { platformPackage, notTheBuiltBinary } = require("../platform.js");

const name = path.basename(__filename);
const found = platformPackage();
if (!found.dir) {
  console.error(`ralph-hooks: ${found.why}`);
  process.exit(1);
}
const native = path.join(found.dir, "bin", name);
const why = notTheBuiltBinary(native, name, found.checksums);
if (why) {
  console.error(`ralph-hooks: refused: ${why}`);
  process.exit(1);
}
const result = spawnSync(native, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  console.error(`ralph-hooks: cannot run ${name}: ${result.error.message}`);
  process.exit(1);
}
process.exit(result.status === null ? 1 : result.status);
