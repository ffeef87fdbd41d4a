#!/usr/bin/env bash
# First-edit result rate (issue 11, item 6): in a fresh project with no
# server running and no earlier result, the first Edit of an existing file
# — does the post-edit hook give a real result (clean or issues, with
# introduced vs already there) or not (warming up / inconclusive)?
#
#   bash benches/first_edit_rate.sh [RUNS] [BIN_DIR...]
#
# Each BIN_DIR holds ralph-post-tool-lsp-diagnostic and ralph-hooks (default:
# target/debug). Prints one table row per (binaries, language).
set -u
runs=${1:-5}
shift || true
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=("$(cd "$(dirname "$0")/.." && pwd)/target/debug")

make_project() { # lang dir
  local lang=$1 dir=$2
  mkdir -p "$dir/src"
  if [ "$lang" = ts ]; then
    echo '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["src"]}' >"$dir/tsconfig.json"
    for i in 1 2 3 4 5 6 7 8; do
      printf 'export function helper%s(x: number): number {\n  return x * %s;\n}\n' "$i" "$i" >"$dir/src/helper$i.ts"
    done
    printf 'import { helper1 } from "./helper1";\nconst bad: string = 1;\nexport const ok = helper1(2);\n' >"$dir/src/main.ts"
    echo "src/main.ts"
  else
    echo '[project]
name = "demo"' >"$dir/pyproject.toml"
    for i in 1 2 3 4 5 6 7 8; do
      printf 'def helper%s(x: int) -> int:\n    return x * %s\n' "$i" "$i" >"$dir/src/helper$i.py"
    done
    printf 'from helper1 import helper1\nbad: str = 1\nok = helper1(2)\n' >"$dir/src/main.py"
    echo "src/main.py"
  fi
}

printf '| binaries | language | runs | result | warming up | inconclusive | median ms |\n|---|---|---|---|---|---|---|\n'
for bin in "${dirs[@]}"; do
  for lang in ts py; do
    ok=0 warming=0 inconclusive=0 times=()
    for run in $(seq 1 "$runs"); do
      dir=$(mktemp -d /tmp/first-edit-XXXXXX)
      rel=$(make_project "$lang" "$dir")
      file="$dir/$rel"
      old=$(cat "$file")
      # The edit adds an error below the existing one.
      if [ "$lang" = ts ]; then new="$old"$'\n''const worse: number = "x";'; else new="$old"$'\n''worse: int = "x"'; fi
      printf '%s\n' "$new" >"$file"
      payload=$(python3 -c 'import json,sys; f,o=sys.argv[1],sys.argv[2]; print(json.dumps({"session_id":"bench","hook_event_name":"PostToolUse","cwd":sys.argv[3],"tool_name":"Edit","tool_input":{"file_path":f},"tool_response":{"filePath":f,"originalFile":o+"\n"}}))' "$file" "$old" "$dir")
      start=$(date +%s%N)
      out=$(cd "$dir" && RALPH_HOOKS_CLI="$bin/ralph-hooks" "$bin/ralph-post-tool-lsp-diagnostic" <<<"$payload" 2>/dev/null)
      end=$(date +%s%N)
      times+=($(((end - start) / 1000000)))
      case "$out" in
        *"warming up"*) warming=$((warming + 1)) ;;
        *inconclusive*) inconclusive=$((inconclusive + 1)) ;;
        *"issues found"* | *clean*) ok=$((ok + 1)) ;;
        *) inconclusive=$((inconclusive + 1)) ;;
      esac
      (cd "$dir" && "$bin/ralph-hooks" daemon stop >/dev/null 2>&1)
      rm -rf "$dir"
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$bin" "$lang" "$runs" "$ok" "$warming" "$inconclusive" "$median"
  done
done
