#!/usr/bin/env node
// The stand-in for a ralph-hooks command until postinstall.js links the
// native binary over it: it runs the native binary from the platform package
// (paying for a node start on every call) once it is the binary this package
// was built with (platform.js), or says why it cannot.
"use strict";

const path = require("path");
const { spawn } = require("child_process");
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
// Killing the command kills the program: the usual signals are passed on,
// and the launcher ends as the program did (by its signal or its status).
// The handlers come first: a signal between the start of the program and
// their installation would end the launcher and orphan the program.
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
let child = null;
for (const signal of forwarded) {
  process.on(signal, () => {
    try {
      child.kill(signal);
    } catch (_) {}
  });
}
child = spawn(native, process.argv.slice(2), { stdio: "inherit" });
child.on("error", (error) => {
  console.error(`ralph-hooks: cannot run ${name}: ${error.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
