#!/usr/bin/env python3
"""Summarizes the probe's marks (bench/backend/probe.sh, part A).

usage: summarize.py probe-cuda.log probe-rocm.log OUT_DIR

Reads the `probe<TAB>timed<TAB>KEY<TAB>n=N<TAB>wall_ns=W<TAB>name=calls:ns...` lines of both
sides and writes, per timed iteration:
  OUT_DIR/probe-time.tsv   benchmark, then per side: wall us, us inside the runtime, the rest
                           (the program's own host code), runtime calls; and rocm - cuda of each
  OUT_DIR/probe-calls.tsv  benchmark, side, function, calls, ns per call
and prints probe-time.tsv plus the functions summed over all benchmarks (ns per call, calls).
"""
import sys
from collections import defaultdict


def read(path):
    rows = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 5 or f[0] != "probe" or f[1] != "timed":
            continue
        key, n = f[2], int(f[3].removeprefix("n="))
        wall = int(f[4].removeprefix("wall_ns="))
        funcs = {}
        for kv in f[5:]:
            name, v = kv.split("=")
            c, ns = v.split(":")
            funcs[name] = (int(c) / n, int(ns) / n)
        rows[key] = (wall / n, funcs)
    return rows


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sides = {"cuda": read(sys.argv[1]), "rocm": read(sys.argv[2])}
    out = sys.argv[3]
    keys = [k for k in sides["cuda"] if k in sides["rocm"]]
    with open(f"{out}/probe-time.tsv", "w") as t, open(f"{out}/probe-calls.tsv", "w") as c:
        head = ["benchmark"]
        for s in sides:
            head += [f"{s}_wall_us", f"{s}_runtime_us", f"{s}_rest_us", f"{s}_calls"]
        head += ["diff_wall_us", "diff_runtime_us", "diff_rest_us"]
        t.write("\t".join(head) + "\n")
        c.write("benchmark\tside\tfunction\tcalls\tns_per_call\n")
        for k in keys:
            row, parts = [k], {}
            for s, rows in sides.items():
                wall, funcs = rows[k]
                rt = sum(ns for _, ns in funcs.values()) / 1e3
                calls = sum(n for n, _ in funcs.values())
                parts[s] = (wall / 1e3, rt, wall / 1e3 - rt)
                row += [f"{wall / 1e3:.2f}", f"{rt:.2f}", f"{wall / 1e3 - rt:.2f}", f"{calls:.1f}"]
                for name, (n, ns) in sorted(funcs.items()):
                    c.write(f"{k}\t{s}\t{name}\t{n:.2f}\t{ns / n if n else 0:.0f}\n")
            row += [f"{parts['rocm'][i] - parts['cuda'][i]:.2f}" for i in range(3)]
            t.write("\t".join(row) + "\n")
    for line in open(f"{out}/probe-time.tsv"):
        f = line.rstrip("\n").split("\t")
        print(f"{f[0][:60]:<60}" + "".join(f"{x:>10}" for x in f[1:]))
    print("\nper function over all benchmarks (per timed iteration summed; ns per call)")
    for s, rows in sides.items():
        tot = defaultdict(lambda: [0.0, 0.0])
        for k in keys:
            for name, (n, ns) in rows[k][1].items():
                tot[name][0] += n
                tot[name][1] += ns
        for name, (n, ns) in sorted(tot.items(), key=lambda x: -x[1][1]):
            print(f"{s}\t{name:<36}{n:>12.1f} calls{ns / n if n else 0:>10.0f} ns/call")


main()
