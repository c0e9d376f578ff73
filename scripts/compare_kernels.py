#!/usr/bin/env python3
"""Whether two directories of objects built by linattn-compile hold the same
kernels: each object's embedded cubins (the ELF images inside it, one per
gpu.binary) are extracted and compared as a set, so host code may differ
(a new host-side check, say) while the kernels are shown unchanged.

    scripts/compare_kernels.py BASE_DIR NEW_DIR [REGEX]

Prints, per object present in both (its name matching REGEX), "same",
"adds N" (every base cubin is in the new object, which has N more: a new
kernel beside unchanged ones) or "differs", with the counts, and exits 1
if any differs. Standard library only.
"""
import os
import re
import struct
import sys


def embedded_elfs(blob):
    """The ELF64 images inside `blob` (after its own header), by their
    section-header table's end."""
    images = []
    at = blob.find(b"\x7fELF", 4)
    while at != -1:
        head = blob[at:at + 64]
        if len(head) == 64 and head[4] == 2:  # ELFCLASS64
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
            end = at + shoff + shentsize * shnum
            if shoff and end <= len(blob):
                images.append(blob[at:end])
                at = blob.find(b"\x7fELF", end)
                continue
        at = blob.find(b"\x7fELF", at + 4)
    return images


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    base, new = sys.argv[1:3]
    pattern = re.compile(sys.argv[3] if len(sys.argv) == 4 else "")
    differ = 0
    for name in sorted(set(os.listdir(base)) & set(os.listdir(new))):
        if not name.endswith(".o") or not pattern.search(name):
            continue
        a = embedded_elfs(open(os.path.join(base, name), "rb").read())
        b = embedded_elfs(open(os.path.join(new, name), "rb").read())
        rest = list(b)
        kept = bool(a)
        for image in a:
            if image in rest:
                rest.remove(image)
            else:
                kept = False
        verdict = ("same" if not rest else f"adds {len(rest)}") if kept else "differs"
        differ += verdict == "differs"
        print(f"{name:36s} {verdict} ({len(a)} / {len(b)} cubins)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
