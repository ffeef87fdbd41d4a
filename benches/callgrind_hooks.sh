#!/usr/bin/env bash
# Hook start-up in instructions: each hook binary run once under
# `valgrind --tool=callgrind` with a real Claude Code payload on stdin,
# for every folder of binaries given. An instruction count does not move
# with the machine's load (wall time on a shared machine does), so builds
# compare exactly: the same payload, the same project, the same count
# within a fraction of a percent from run to run.
#
#   bash benches/callgrind_hooks.sh PAYLOAD_DIR BIN_DIR [BIN_DIR...]
#
# PAYLOAD_DIR holds captured payloads (SessionStart.json, PreToolUse.json,
# PostToolUse.Bash.json, PostToolUse.Edit.json, Stop.json; `/PROJECT` in
# them is replaced by a fresh git project). Each BIN_DIR holds the hook
# binaries (a release build). Prints a Markdown table: instructions of the
# hook's own process (children such as `git status` are not counted),
# one column per BIN_DIR, and the last column's change against the first.
# No daemon is started (RALPH_HOOKS_DAEMON=0).
set -eu
payloads=$1
shift
dirs=("$@")
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

work=$(mktemp -d /tmp/ralph-callgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
project=$work/project
mkdir -p "$project/.claude/orchestrator"
(
  cd "$project"
  git init -q
  printf 'one\n' > a.txt
  printf '.claude/\n' > .gitignore
  git add -A
  git -c user.name=b -c user.email=b@b -c commit.gpgsign=false commit -q -m init
)

payload() { # name -> path of the payload with the project's path in it
  sed "s#/PROJECT#$project#g" "$payloads/$1" > "$work/$1"
  echo "$work/$1"
}
printf '{"session_id":"s","hook_event_name":"UserPromptSubmit","cwd":"%s","prompt":"make the tests pass"}\n' \
  "$project" > "$work/UserPromptSubmit.json"

# (label, binary, payload)
cases=(
  "SessionStart hook|ralph-session-start|$(payload SessionStart.json)"
  "UserPromptSubmit hook|ralph-user-prompt-submit|$work/UserPromptSubmit.json"
  "PreToolUse guard, Bash|ralph-pre-tool-stop-guard|$(payload PreToolUse.json)"
  "PostToolUse, Bash (command changed nothing)|ralph-post-tool-lsp-diagnostic|$(payload PostToolUse.Bash.json)"
  "PostToolUse, Edit of a file no server checks|ralph-post-tool-lsp-diagnostic|$(payload PostToolUse.Edit.json)"
  "Stop hook, no loop|ralph-stop-loop-controller|$(payload Stop.json)"
)

instructions() { # binary payload -> Ir of the process itself
  local out=$work/cg.out log=$work/cg.log
  rm -f "$out"
  # One run first: the Bash hook's record of the dirty files is written
  # by the first run; measure the steady state.
  (cd "$project" && CLAUDE_PROJECT_DIR=$project RALPH_HOOKS_DAEMON=0 "$1" < "$2" >/dev/null 2>&1) || true
  (cd "$project" && CLAUDE_PROJECT_DIR=$project RALPH_HOOKS_DAEMON=0 \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$1" < "$2" >/dev/null 2>"$log") || true
  grep -o 'Collected : [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$'
}

header="| hook (payload) |"
rule="|---|"
for dir in "${dirs[@]}"; do
  header="$header $(basename "$dir") |"
  rule="$rule---:|"
done
echo "$header change |"
echo "$rule---:|"
for entry in "${cases[@]}"; do
  IFS='|' read -r label binary file <<<"$entry"
  row="| $label |"
  first=""
  last=""
  for dir in "${dirs[@]}"; do
    n=$(instructions "$dir/$binary" "$file")
    row="$row $(printf "%'d" "$n") |"
    [ -z "$first" ] && first=$n
    last=$n
  done
  change=$(awk -v a="$first" -v b="$last" 'BEGIN { if (a > 0) printf "%+.1f %%", (b - a) * 100 / a }')
  echo "$row $change |"
done
