#!/usr/bin/env python3
"""Checks (or regenerates) the command outputs shown in docs/algorithms.md.

The doc shows every stage of the compiler as a command and the output it
prints. The convention, fixed so that this script can find them:

  ```console
  $ build/bin/linattn-opt docs/examples/tiny_gla.mlir --linattn-recurrence-to-scan
  ```
  ```mlir
  ...the output, exactly as printed (stdout and stderr together)...
  ```

A ```console block holds one command, on a line starting with `$ ` (a line
ending in a backslash continues it). The next fenced block, after blank
lines at most, is its output. An output block may show an excerpt: put

  <!-- excerpt: SEGMENT; SEGMENT; ... -->

between the two blocks. A SEGMENT is `/REGEX/`: the first line, after the
previous segment, that matches; or `/REGEX1/../REGEX2/`: from that line
through the next line matching REGEX2. `-N` right after the first regex also
takes the N lines before it, `+M` at the end the M lines after it (so
`/exp/-4../^  }$/+1`). The excerpt is those lines, with an elision line
(`// ...` in an mlir block, `...` in any other) wherever lines are left out. An output
block that contains elision lines but has no excerpt comment is a hand-made
excerpt: its other lines must appear in the output in order.

Commands run under bash (with pipefail) from the repository root, with a
leading `build/bin/` replaced by --bin-dir. Trailing whitespace is ignored.

  check (the lit test test/Docs/algorithms.test):
    check_algorithms_doc.py --bin-dir BUILD/bin --src-root SRC
  regenerate the output blocks (never edit them by hand):
    /usr/bin/python3 test/Docs/Inputs/check_algorithms_doc.py --update
"""

import argparse
import difflib
import os
import re
import subprocess
import sys

DOC = os.path.join("docs", "algorithms.md")
SCRIPT = os.path.join("test", "Docs", "Inputs", "check_algorithms_doc.py")
FENCE = re.compile(r"^```([\w+-]*)\s*$")
EXCERPT = re.compile(r"^<!--\s*excerpt:(.*?)-->\s*$")
SEGMENT = re.compile(
    r"\s*/((?:\\.|[^/\\])*)/"            # /REGEX/
    r"(?:-(\d+))?"                       # optional -N
    r"(?:\.\./((?:\\.|[^/\\])*)/)?"      # optional ../REGEX2/
    r"(?:\+(\d+))?\s*$")                 # optional +M
BIN_PREFIX = re.compile(r"(?<![\w/.-])build/bin/")


class DocError(Exception):
    pass


class Example:
    """One command, its output block, and where they are in the doc."""

    def __init__(self, command, command_line, lang, excerpt, first, last):
        self.command = command          # shell text, as written after `$ `
        self.command_line = command_line  # 1-based line of the `$ ` line
        self.lang = lang                # language of the output block
        self.excerpt = excerpt          # excerpt spec text, or None
        self.first = first              # 0-based index of the first output line
        self.last = last                # 0-based index past the last one


def parse(lines):
    """The examples of the doc, in order."""
    examples = []
    i = 0
    n = len(lines)
    while i < n:
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        while i < n and not lines[i].startswith("```"):
            i += 1
        if i == n:
            raise DocError(f"{DOC}:{start + 1}: unclosed code block")
        body = lines[start + 1:i]
        i += 1
        if lang != "console":
            continue
        # A console block: one `$ ` command, possibly continued.
        cmd_lines = [l for l in body if l.strip()]
        if not cmd_lines or not cmd_lines[0].startswith("$ "):
            raise DocError(f"{DOC}:{start + 1}: a ```console block must start "
                           "with a `$ ` command line")
        command = "\n".join(cmd_lines)[2:]
        parts = command.split("\n")
        for p in parts[:-1]:
            if not p.endswith("\\"):
                raise DocError(f"{DOC}:{start + 2}: one command per ```console "
                               "block (continue lines with a backslash)")
        # Blank lines and at most one excerpt comment, then the output block.
        excerpt = None
        while i < n and (not lines[i].strip() or EXCERPT.match(lines[i])):
            em = EXCERPT.match(lines[i])
            if em:
                if excerpt is not None:
                    raise DocError(f"{DOC}:{i + 1}: two excerpt comments")
                excerpt = em.group(1).strip()
            i += 1
        m = FENCE.match(lines[i]) if i < n else None
        if not m or m.group(1) == "console":
            raise DocError(f"{DOC}:{start + 2}: command `{parts[0]}` is not "
                           "followed by an output block")
        out_start = i + 1
        i = out_start
        while i < n and not lines[i].startswith("```"):
            i += 1
        if i == n:
            raise DocError(f"{DOC}:{out_start}: unclosed output block")
        examples.append(Example(command, start + 2, m.group(1), excerpt,
                                out_start, i))
        i += 1
    return examples


def elision(lang):
    return "// ..." if lang == "mlir" else "..."


def is_elision(line):
    return line.strip() in ("// ...", "...")


def run(example, bin_dir, src_root):
    """The command's output lines (stdout and stderr), trailing space removed."""
    command = BIN_PREFIX.sub(bin_dir.rstrip("/") + "/", example.command)
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command],
                          cwd=src_root, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    text = proc.stdout.decode("utf-8", errors="replace")
    if proc.returncode != 0:
        raise DocError(f"{DOC}:{example.command_line}: `{example.command}` "
                       f"exited with {proc.returncode}:\n{text}")
    out = [l.rstrip() for l in text.split("\n")]
    while out and not out[-1]:
        out.pop()
    return out


def select(example, output):
    """The lines the output block should hold."""
    if example.excerpt is None:
        return output
    kept = []  # (first, last) inclusive ranges, in order
    cursor = 0
    for seg in example.excerpt.split(";"):
        if not seg.strip():
            continue
        m = SEGMENT.match(seg)
        if not m:
            raise DocError(f"{DOC}:{example.command_line}: bad excerpt "
                           f"segment `{seg.strip()}`")
        start_re, end_re = re.compile(m.group(1)), m.group(3)
        before, after = int(m.group(2) or 0), int(m.group(4) or 0)
        hit = next((j for j in range(cursor, len(output))
                    if start_re.search(output[j])), None)
        if hit is None:
            raise DocError(f"{DOC}:{example.command_line}: excerpt anchor "
                           f"/{m.group(1)}/ not found in the output of "
                           f"`{example.command}`")
        end = hit
        if end_re is not None:
            end_re = re.compile(end_re)
            end = next((j for j in range(hit + 1, len(output))
                        if end_re.search(output[j])), None)
            if end is None:
                raise DocError(f"{DOC}:{example.command_line}: excerpt end "
                               f"/{m.group(3)}/ not found after "
                               f"/{m.group(1)}/")
        first = max(cursor, hit - before)
        last = min(len(output) - 1, end + after)
        if kept and first <= kept[-1][1] + 1:
            kept[-1] = (kept[-1][0], max(kept[-1][1], last))
        else:
            kept.append((first, last))
        cursor = last + 1
    lines = []
    previous_end = -1
    for first, last in kept:
        if first > previous_end + 1:
            lines.append(elision(example.lang))
        lines.extend(output[first:last + 1])
        previous_end = last
    if previous_end < len(output) - 1:
        lines.append(elision(example.lang))
    return lines


def is_subsequence(shown, output):
    it = iter(output)
    return all(any(line == o for o in it) for line in shown if not is_elision(line))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src-root", default=os.path.normpath(
        os.path.join(here, "..", "..", "..")))
    parser.add_argument("--bin-dir", default=None,
                        help="where linattn-opt is (default: SRC/build/bin)")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the output blocks from the real outputs")
    args = parser.parse_args()
    src_root = os.path.abspath(args.src_root)
    bin_dir = os.path.abspath(args.bin_dir or os.path.join(src_root, "build", "bin"))
    doc_path = os.path.join(src_root, DOC)
    regenerate = f"/usr/bin/python3 {SCRIPT} --update"
    if args.bin_dir:
        regenerate += f" --bin-dir {bin_dir}"

    with open(doc_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        examples = parse(lines)
        if not examples:
            raise DocError(f"{DOC}: no command blocks found (see the "
                           f"convention in {SCRIPT})")
        stale = []
        replacements = []
        for ex in examples:
            output = run(ex, bin_dir, src_root)
            shown = [l.rstrip() for l in lines[ex.first:ex.last]]
            while shown and not shown[-1]:
                shown.pop()
            hand_excerpt = ex.excerpt is None and any(map(is_elision, shown))
            if hand_excerpt:
                if not is_subsequence(shown, output):
                    stale.append((ex, shown, output))
                continue
            expected = select(ex, output)
            if shown != expected:
                stale.append((ex, shown, expected))
                replacements.append((ex, expected))
    except DocError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    if args.update:
        # Bottom-up so that earlier line numbers stay valid.
        for ex, expected in sorted(replacements, key=lambda r: -r[0].first):
            lines[ex.first:ex.last] = expected
        hand = [s for s in stale if s[0].excerpt is None and
                any(map(is_elision, s[1]))]
        if replacements:
            with open(doc_path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
        print(f"{DOC}: {len(examples)} command blocks, "
              f"{len(replacements)} rewritten")
        for ex, _, _ in hand:
            print(f"error: {DOC}:{ex.command_line}: hand-made excerpt no longer "
                  f"matches `{ex.command}`; give it an <!-- excerpt: ... --> "
                  "comment", file=sys.stderr)
        return 1 if hand else 0

    if not stale:
        print(f"{DOC}: {len(examples)} command blocks match their outputs")
        return 0
    for ex, shown, expected in stale:
        print(f"error: {DOC}:{ex.command_line}: the output shown for\n"
              f"  $ {ex.command}\nis stale:", file=sys.stderr)
        diff = list(difflib.unified_diff(shown, expected, "shown", "actual",
                                         lineterm="", n=1))
        for line in diff[:40]:
            print("  " + line, file=sys.stderr)
        if len(diff) > 40:
            print(f"  ... ({len(diff) - 40} more diff lines)", file=sys.stderr)
    print(f"{len(stale)} of {len(examples)} command blocks are stale; "
          f"regenerate the doc (from {src_root}) with\n  {regenerate}",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
