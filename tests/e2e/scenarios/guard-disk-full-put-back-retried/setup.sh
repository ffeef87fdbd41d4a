# Plain mode, a loop running, and `.claude` on a small disk of its own (a
# 256 KiB tmpfs; check.py unmounts it). Needs root, as CI runs it.
ralph-hooks loop start "E2E-GOAL: fix the build" --promise "BUILD FIXED" --no-diagnostics
cp -a .claude "$E2E_OUT/claude-saved"
mount -t tmpfs -o size=256k tmpfs .claude
cp -a "$E2E_OUT/claude-saved/." .claude/
