#!/usr/bin/env python3
"""What ptxas gave each kernel of an object built by linattn-compile: for
every embedded cubin (compare_kernels.py's embedded_elfs), in order, its
kernel's name, registers a thread, stack frame bytes (> 0: spills or local
arrays) and code bytes, read from the cubin's .nv.info attributes
(EIATTR_REGCOUNT 0x2f, EIATTR_FRAME_SIZE 0x11) and its .text section:

    scripts/kernel_resources.py OBJECT.o [REGEX]

REGEX keeps the kernels whose name it matches. Needs no CUDA tools (the
machine that compiles may have ptxas alone). Standard library only.
"""
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_kernels import embedded_elfs  # noqa: E402

REGCOUNT, FRAME_SIZE = 0x2F, 0x11


def sections(elf):
    """(name, offset, size) of every section of an ELF64 image."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]

    def name(offset):
        end = elf.index(b"\0", names + offset)
        return elf[names + offset:end].decode()

    return [(name(h[0]), h[4], h[5]) for h in headers]


def attributes(data):
    """{attribute: its 32-bit values} of a .nv.info section (records of
    format, attribute, then a 16-bit size and that many bytes for format
    4; fixed sizes for the others)."""
    found, at = {}, 0
    while at + 2 <= len(data):
        fmt, attr = data[at], data[at + 1]
        if fmt == 4:
            size, = struct.unpack_from("<H", data, at + 2)
            found[attr] = struct.unpack_from("<" + "I" * (size // 4), data, at + 4)
            at += 4 + size
        elif fmt == 3:
            at += 4
        elif fmt in (1, 2):
            at += 2 if fmt == 1 else 4
        else:
            break
    return found


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    pattern = re.compile(sys.argv[2] if len(sys.argv) == 3 else "")
    for index, elf in enumerate(embedded_elfs(open(sys.argv[1], "rb").read())):
        secs = sections(elf)
        texts = [(n[len(".text."):], size) for n, _, size in secs if n.startswith(".text.")]
        info = {}
        for n, offset, size in secs:
            if n == ".nv.info":
                info.update(attributes(elf[offset:offset + size]))
        # (symbol index, value) pairs; one kernel a cubin here.
        regs = info.get(REGCOUNT, (0, 0))[-1]
        frame = info.get(FRAME_SIZE, (0, 0))[-1]
        for kernel, code in texts:
            if pattern.search(kernel):
                print(f"{index:3d} {kernel:44s} registers {regs:3d} frame {frame:4d} code {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
