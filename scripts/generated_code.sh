#!/usr/bin/env bash
# What the GPU pipeline generates, to show that a change leaves it alone:
#
#   scripts/generated_code.sh snapshot BUILD_DIR OUT_DIR [SRC_DIR=.]
#       compiles every variant of SRC_DIR's bench/gpu/variants.sh (what
#       bench/gpu/prepare.sh builds for the device) and every example of
#       SRC_DIR with its default options through BUILD_DIR's
#       `linattn-compile --format=isa`, and writes OUT_DIR/<variant>.ptx
#       (the kernels' PTX) and OUT_DIR/<variant>.host.mlir (the host code,
#       the PTX left out);
#   scripts/generated_code.sh compare BASE_DIR NEW_DIR
#       diffs two snapshots file by file and prints the variants whose
#       PTX or host code differ (host code that differs only in the order
#       of its constants is told apart) and the variants new in NEW_DIR
#       (a new kind's, say); exits 1 if any differs otherwise, or if a
#       variant of BASE_DIR is missing from NEW_DIR.
#   scripts/generated_code.sh against REV [BUILD_DIR=build]
#       builds REV (a git revision) in a worktree beside the checkout
#       (build-rev/, reused when it is at REV already), snapshots it and
#       BUILD_DIR, and compares them.
# JOBS (default 2) variants compile at once.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}

snapshot() {
  local build=$1 out=$2 src=${3:-.}
  [ -x "$build/bin/linattn-compile" ] || { echo "generated_code: no $build/bin/linattn-compile" >&2; exit 2; }
  rm -rf "$out" && mkdir -p "$out/specs"
  out=$(realpath "$out")
  local list="$out/variants.txt"
  "$src/bench/gpu/variants.sh" "$out/specs" > "$list"
  for example in "$src"/examples/*.mlir; do
    echo "example_$(basename "$example" .mlir) $example" >> "$list"
  done
  export build out
  # shellcheck disable=SC2016 # expanded by the inner shell
  xargs -P "$JOBS" -L 1 bash -c '
    name=$0 spec=$1; shift
    "$build/bin/linattn-compile" "$spec" -o "$out/$name.mlir" --format=isa "$@" 2> "$out/$name.err" || {
      echo "generated_code: $name failed to compile:" >&2; cat "$out/$name.err" >&2; exit 255; }
    /usr/bin/python3 test/lib/extract_ptx.py "$out/$name.mlir" > "$out/$name.ptx"
    # The host code: the module without the binary'"'"'s escaped PTX and
    # the time its translation took.
    sed -E -e "s/assembly = \"([^\"\\\\]|\\\\.)*\"/assembly = \"<ptx>\"/" \
        -e "s/LLVMIRToISATimeInMs = [0-9]+/LLVMIRToISATimeInMs = _/" "$out/$name.mlir" > "$out/$name.host.mlir"
    rm -f "$out/$name.mlir" "$out/$name.err"' < "$list"
  echo "generated_code: $(wc -l < "$list") variants in $out"
}

# The host code with each llvm.mlir.constant's uses replaced by its value
# and its definition dropped, then every SSA name renumbered in order of
# appearance: equal for two modules that differ only in the order their
# constants were hoisted in.
normalized() {
  /usr/bin/python3 - "$1" <<'PY'
import re, sys
consts, names, out = {}, {}, []
def rename(m):
    name = m.group(0)
    if name in consts:
        return "<" + consts[name] + ">"
    return names.setdefault(name, "%%v%d" % len(names))
for line in open(sys.argv[1]):
    if re.match(r"\s*(llvm|func|gpu)\.func ", line):
        consts, names = {}, {}  # SSA names are scoped by function
    const = re.match(r"\s*(%\w+) = llvm\.mlir\.constant\((.*)\) : \S+$", line)
    if const:
        consts[const.group(1)] = const.group(2)
        continue
    out.append(re.sub(r"%\w+", rename, line))
sys.stdout.write("".join(out))
PY
}

compare() {
  local base=$1 new=$2 differ=0 same=0 reordered=0 added=0
  while read -r name _; do
    if ! grep -q "^$name " "$base/variants.txt"; then
      echo "new: $name"; added=$((added + 1)); continue
    fi
    for part in ptx host.mlir; do
      if ! cmp -s "$base/$name.$part" "$new/$name.$part"; then
        lines=$(diff "$base/$name.$part" "$new/$name.$part" | grep -c '^[<>]' || true)
        if [ "$part" = host.mlir ] && cmp -s <(normalized "$base/$name.$part") <(normalized "$new/$name.$part"); then
          echo "reordered: $name.$part ($lines lines; only its constants in another order)"
          reordered=$((reordered + 1))
        else
          echo "differs: $name.$part ($lines lines)"
          differ=$((differ + 1))
        fi
      else
        same=$((same + 1))
      fi
    done
  done < "$new/variants.txt"
  while read -r name _; do
    if ! grep -q "^$name " "$new/variants.txt"; then
      echo "differs: $name is gone"; differ=$((differ + 1))
    fi
  done < "$base/variants.txt"
  echo "generated_code: $same identical, $reordered reordered, $differ different, $added new"
  [ "$differ" -eq 0 ]
}

case "${1:-}" in
  snapshot) snapshot "${2:?BUILD_DIR}" "${3:?OUT_DIR}" ;;
  compare) compare "${2:?BASE_DIR}" "${3:?NEW_DIR}" ;;
  against)
    rev=$(git rev-parse --verify "${2:?REV}^{commit}")
    build=${3:-build}
    src=build-rev/src
    if [ ! -d "$src" ]; then
      git worktree add --detach "$src" "$rev" >/dev/null
    else
      git -C "$src" checkout --detach -q "$rev"
    fi
    BUILD_DIR=../obj "$src/scripts/setup.sh" >/dev/null
    snapshot build-rev/obj build-rev/generated "$src"
    snapshot "$build" "$build/generated"
    compare build-rev/generated "$build/generated" ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
