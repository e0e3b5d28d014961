#!/usr/bin/env python3
"""Runtime calls per generated token of real programs (bench/examples/probe-examples.sh).

usage: probe_summary.py OUT_DIR

Reads OUT_DIR/probe-cases.tsv and, per case and side, the probe's `probe<TAB>exit<TAB>...` line
(process totals) of probe-CASE-SIDE-{long,short}.log and the units the run reports in its .out
(token: the last "N tokens generated"; forward: the "Took ..." lines). Per unit is
(long - short) / (long units - short units): loading, the prompt and start-up cancel.
Writes
  OUT_DIR/examples-calls.tsv          case, unit, side, function, calls_per_unit, ns_per_call
  OUT_DIR/examples-calls-summary.tsv  case, unit, per side: runtime calls, us inside the
                                      runtime and process wall us, per unit
  OUT_DIR/examples-calls-ops.tsv      case, op, cuda_calls_per_unit, rocm_calls_per_unit: the
                                      functions grouped into logical operations, so that
                                      both sides line up
and prints the summary and the operations.
"""
import re
import sys
from collections import defaultdict

SIDES = ("cuda", "rocm")
# logical operation of each function the probe counts (ROCm: HIP; stock: CUDA driver/runtime)
OPS = {
    "launch": "hipModuleLaunchKernel cuLaunchKernel",
    "launcher launch": "cudaLaunchKernel",
    "alloc": "hipMallocAsync hipMalloc cuMemAllocAsync cuMemAlloc_v2",
    "free": "hipFreeAsync hipFree cuMemFreeAsync cuMemFree_v2",
    "copy HtoD": "hipMemcpyAsync_HtoD hipMemcpyHtoDAsync cuMemcpyHtoDAsync_v2",
    "copy DtoH": "hipMemcpyAsync_DtoH hipMemcpyDtoHAsync cuMemcpyDtoHAsync_v2",
    "copy DtoD": "hipMemcpyAsync_DtoD hipMemcpyDtoDAsync hipMemcpyPeerAsync cuMemcpyDtoDAsync_v2 cuMemcpyPeerAsync",
    "copy HtoH/default": "hipMemcpyAsync_HtoH hipMemcpyAsync_Default",
    "memset": "hipMemsetAsync cuMemsetD8Async",
    "sync": "hipStreamSynchronize hipDeviceSynchronize hipEventSynchronize cuStreamSynchronize cuCtxSynchronize cuEventSynchronize",
    "event create": "hipEventCreateWithFlags cuEventCreate",
    "event destroy": "hipEventDestroy cuEventDestroy_v2",
    "event record": "hipEventRecord cuEventRecord",
    "event wait": "hipStreamWaitEvent cuStreamWaitEvent",
    "set-device/ctx query": "hipSetDevice hipGetDevice cuCtxGetCurrent cuCtxSetCurrent",
    "capture query": "hipStreamIsCapturing cuStreamIsCapturing",
    "function lookup": "hipModuleGetFunction cuModuleGetFunction",
    "module load": "hipModuleLoadData cuModuleLoadData",
    "attribute": "hipDeviceGetAttribute cuDeviceGetAttribute",
    "gemm": "rocblas_gemm_strided_batched_ex cublasGemmStridedBatchedEx",
}
OP_OF = {f: op for op, fs in OPS.items() for f in fs.split()}
# the launchers' cudaLaunchKernel: linked statically into the ROCm binary, so not seen there
UNSEEN = {("rocm", "launcher launch")}


def totals(path):
    """(wall_ns, {function: (calls, ns)}) of the probe's exit line, or None."""
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return None
    for line in lines:
        f = line.split("\t")
        if len(f) >= 3 and f[0] == "probe" and f[1] == "exit":
            funcs = {}
            for kv in f[3:]:
                name, v = kv.split("=")
                c, ns = v.split(":")
                funcs[name] = (int(c), int(ns))
            return int(f[2].removeprefix("wall_ns=")), funcs
    return None


def units(path, unit):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return None
    if unit == "forward":
        return len(re.findall(r"^Took ", text, re.M))
    found = re.findall(r"(\d+) tokens generated", text)
    return int(found[-1]) if found else None


def per_unit(out, case, side, unit):
    """(units note, wall_ns per unit, {function: (calls per unit, ns per call)}) or (why, None, None)."""
    runs = {}
    for length in ("long", "short"):
        base = f"{out}/probe-{case}-{side}-{length}"
        t, n = totals(base + ".log"), units(base + ".out", unit)
        if t is None or n is None:
            return f"{length} run: no probe exit line or no unit count", None, None
        runs[length] = (t, n)
    (lw, lf), ln = runs["long"]
    (sw, sf), sn = runs["short"]
    du = ln - sn
    note = f"{ln} - {sn} = {du} {unit}s"
    if du <= 0:
        return note + ": no difference", None, None
    funcs = {}
    for name in sorted(set(lf) | set(sf)):
        dc = lf.get(name, (0, 0))[0] - sf.get(name, (0, 0))[0]
        dns = lf.get(name, (0, 0))[1] - sf.get(name, (0, 0))[1]
        funcs[name] = (dc / du, dns / dc if dc else None, dns / du)
    return note, (lw - sw) / du, funcs


def fmt(x, digits=2):
    return "NA" if x is None else f"{x:.{digits}f}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    cases, notes = [], []
    for line in open(f"{out}/probe-cases.tsv", encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if f[0] == "case":
            continue
        if f[2] == "skipped":
            notes.append(f"# {f[0]}: skipped: {f[3]}")
        else:
            cases.append((f[0], f[2], f[3], f[4]))
    method = [
        "# runtime calls per unit of real programs (bench/examples/probe-examples.sh): each case run twice per side",
        "# under the LD_PRELOAD probe (process totals at exit), with a long and a short length; per unit =",
        "# (long - short) / (long units - short units), the units read from each run's output (token: its",
        "# 'N tokens generated'; forward: its 'Took' lines), so loading, prompt and start-up cancel.",
        "# cuda: the stock build's CUDA driver calls and the CUDA runtime's cudaLaunchKernel of the kernels'",
        "# extern \"C\" launchers (quantized matmul-vector); rocm: the HIP calls of the generated backend through",
        "# hip-on-cuda (the same launchers are linked statically into the binary there: their launches are not",
        "# seen, so rocm's calls leave them out). runtime us: time inside the counted calls; wall: the process.",
    ]
    rows, summary, ops = [], [], []
    for case, unit, long_len, short_len in cases:
        res = {s: per_unit(out, case, s, unit) for s in SIDES}
        for s in SIDES:
            notes.append(f"# {case} {s}: lengths {long_len}/{short_len}: {res[s][0]}")
            for name, (c, ns, _) in (res[s][2] or {}).items():
                rows.append([case, unit, s, name, fmt(c), fmt(ns, 0)])
        srow = [case, unit]
        for what in ("calls", "runtime", "wall"):
            for s in SIDES:
                _, wall, funcs = res[s]
                if funcs is None:
                    srow.append("NA")
                elif what == "calls":
                    srow.append(fmt(sum(c for c, _, _ in funcs.values())))
                elif what == "runtime":
                    srow.append(fmt(sum(t for _, _, t in funcs.values()) / 1e3))
                else:
                    srow.append(fmt(wall / 1e3))
        summary.append(srow)
        by_op = {s: defaultdict(float) for s in SIDES}
        for s in SIDES:
            for name, (c, _, _) in (res[s][2] or {}).items():
                by_op[s][OP_OF.get(name, f"other: {name}")] += c
        for op in [o for o in OPS if o in by_op["cuda"] or o in by_op["rocm"]] + sorted(
            o for o in set(by_op["cuda"]) | set(by_op["rocm"]) if o not in OPS
        ):
            ops.append([case, op] + [
                "NA" if res[s][2] is None or ((s, op) in UNSEEN and not by_op[s][op]) else fmt(by_op[s][op])
                for s in SIDES
            ])

    def write(name, head, body):
        with open(f"{out}/{name}", "w") as f:
            f.write("\n".join(method + notes) + "\n")
            f.write("\t".join(head) + "\n")
            for r in body:
                f.write("\t".join(r) + "\n")

    write("examples-calls.tsv", ["case", "unit", "side", "function", "calls_per_unit", "ns_per_call"], rows)
    shead = ["case", "unit"] + [f"{s}_{w}_per_unit" for w in ("calls", "runtime_us", "wall_us") for s in SIDES]
    write("examples-calls-summary.tsv", shead, summary)
    write("examples-calls-ops.tsv", ["case", "op", "cuda_calls_per_unit", "rocm_calls_per_unit"], ops)

    print("\n".join(notes))
    print(f"\n{'case':<30}{'unit':<9}" + "".join(f"{h.removesuffix('_per_unit'):>16}" for h in shead[2:]))
    for r in summary:
        print(f"{r[0]:<30}{r[1]:<9}" + "".join(f"{x:>16}" for x in r[2:]))
    print(f"\n{'case / op':<38}{'cuda':>10}{'rocm':>10}   calls per unit (rocm's launcher launches: not seen)")
    last = None
    for case, op, c, r in ops:
        if case != last:
            print(case)
            last = case
        print(f"    {op:<34}{c:>10}{r:>10}")


main()
