"""Per-instruction counts of one function from a callgrind profile, beside its disassembly.

    valgrind --tool=callgrind --dump-instr=yes --separate-threads=yes \\
        --callgrind-out-file=/tmp/cg .venv/bin/python -m squall run --mode calls -o /tmp/x.sqrec \\
        bench/pyperf/small.py richards 1
    python bench/callgrind_instr.py /tmp/cg-01 .venv/lib/python3.11/site-packages/squall/_engine*.so \\
        'encode::Cx::object' [--per N] [--min X]

The engine is built without debug info, so callgrind_annotate shows no lines inside it; this
reads the profile's instruction positions (callgrind's compressed ``+N``/``-N``/``*`` form),
sums each instruction's own cost (not the calls it makes) for the function whose name contains
the pattern, and prints ``objdump -d`` of that function with each instruction's count, divided
by ``--per`` (e.g. the function's call count, to read instructions per call) and only those at
or above ``--min``. It is how the eleventh session found where `memo_inline_whole`'s ~918
instructions per record go (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess


def instruction_costs(profile: str, pattern: str) -> dict[int, int]:
    """Address -> the cost spent at that instruction by functions whose name has ``pattern``."""
    names: dict[str, str] = {}
    current = ""
    last = 0
    skip_call_line = False
    costs: collections.Counter[int] = collections.Counter()
    with open(profile, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "fn":
                    current = names.get(m.group(2), "")
                continue
            if line.startswith("calls="):
                skip_call_line = True  # the next position line is the call's inclusive cost
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            fields = line.split()
            tok = fields[0]
            if tok == "*":
                addr = last
            elif tok[0] in "+-":
                addr = last + int(tok, 0)
            else:
                addr = int(tok, 0)
            last = addr
            if skip_call_line:
                skip_call_line = False
                continue
            if pattern in current and len(fields) >= 3:
                costs[addr] += int(fields[2])
    return costs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", help="a callgrind file written with --dump-instr=yes")
    ap.add_argument("library", help="the shared object the function is in")
    ap.add_argument("pattern", help="part of the function's demangled name")
    ap.add_argument("--per", type=float, default=1.0, help="divide each count by this")
    ap.add_argument("--min", type=float, default=0.0, help="print instructions at or above this")
    args = ap.parse_args()
    costs = instruction_costs(args.profile, args.pattern)
    symbols = subprocess.run(["nm", "-C", "-S", args.library], capture_output=True, text=True, check=True)
    found = [
        (int(p[0], 16), int(p[1], 16), " ".join(p[3:]))
        for p in (ln.split() for ln in symbols.stdout.splitlines())
        if len(p) >= 4 and args.pattern in " ".join(p[3:])
    ]
    if not found:
        raise SystemExit(f"no symbol in {args.library} contains {args.pattern!r}")
    for start, size, name in found:
        listing = subprocess.run(
            [
                "objdump",
                "-d",
                "--no-show-raw-insn",
                "-C",
                args.library,
                f"--start-address={start:#x}",
                f"--stop-address={start + size:#x}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        total = 0.0
        print(f"== {name}")
        for ln in listing.splitlines():
            m = re.match(r"\s+([0-9a-f]+):\s+(.*)", ln)
            if not m:
                continue
            n = costs.get(int(m.group(1), 16), 0) / args.per
            total += n
            if n >= args.min and n > 0:
                print(f"{n:10.2f}  {m.group(1)}  {m.group(2)}")
        print(f"== total {total:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
