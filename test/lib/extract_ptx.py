#!/usr/bin/env python3
"""Prints the PTX embedded in the gpu.binary ops of an MLIR file (stdin or a
path) as plain lines, so FileCheck can match it line by line:

    linattn-opt spec.mlir --linattn-to-nvvm=format=isa | extract_ptx.py

MLIR prints the assembly as an escaped string (`\\0A` for a newline); each
binary's text is unescaped and printed after a `// gpu.binary @NAME` line.
Exits 1 when the input holds no PTX.
"""
import re
import sys

text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
found = 0
for match in re.finditer(r'gpu\.binary @(\w+)[^\n]*?assembly = "((?:[^"\\]|\\.)*)"', text):
    found += 1
    ptx = re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), match.group(2))
    print(f"// gpu.binary @{match.group(1)}")
    print(ptx.replace("\\\\", "\\"))
if not found:
    sys.exit("extract_ptx.py: no gpu.binary with PTX assembly in the input")
