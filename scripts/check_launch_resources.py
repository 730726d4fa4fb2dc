#!/usr/bin/python3
"""The launch resources of the kernels of kernels/cuda/*.cu, from the compiler's own report, checked
against what their launches ask for. No GPU needed. Reads, in a build folder:

  obj/kernels/cuda/*.cu.resources  ptxas' report of the object build (nvcc --resource-usage, see the
                                   Makefile): per kernel and architecture of GPU_ARCHS, registers per
                                   thread, spill stores and loads, static shared memory;
  ptx/kernels/cuda/*.ptx           the kernels' PTX (make ptx): each kernel's declared launch limits
                                   (declare_launch_limits, kernels/cuda/device_primitives.cuh: the
                                   most threads per block and dynamic shared memory its launcher
                                   asks for, stated with the launcher's own constants) and its
                                   __launch_bounds__ (.maxntid).

Fails (exit 1, naming the kernel on stderr) when, on any architecture, a kernel
  - declares no launch limits (every kernel of ours in the report must);
  - is launched with more than 256 threads and no __launch_bounds__, with more than its
    __launch_bounds__ allow, or with more than 1024;
  - needs more registers for its threads than a block has: registers are allocated per warp in
    units of 256 (the hardware's rule: 255 a thread fit 256 threads, 128 fit 512, 64 fit 1024);
  - needs more shared memory, static plus dynamic, than a block may opt into; a kernel whose
    launcher checks the dynamic part against the device's limit itself must use no static part;
  - spills registers (a function it calls included).
CUB's kernels (token_sort.cu) are launched by CUB with its own tuned configurations: listed, not
checked, and their spills are CUB's (the Makefile builds that file without the spill warning
under CUDA 12, whose CUB spills there).

Prints one row per kernel and architecture, then one line of summary. With --readme FILE it also
rewrites the table between the markers of FILE (kernels/README.md), one row per kernel template
and architecture.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

KIB = 1024
# The CUDA C++ Programming Guide's technical specifications per compute capability, as
# tests/cuda_sim/device_limits.cpp has them: the shared memory a block may opt into.
SHARED_OPTIN = {"sm_80": 163 * KIB, "sm_90": 227 * KIB}
REGISTERS_PER_BLOCK = 65536
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
WARP = 32
MAX_THREADS = 1024
UNBOUNDED_THREADS = 256  # 255 registers a thread still fit: above it, __launch_bounds__
DEVICE_LIMIT = -1  # kDeviceSharedLimit (kernels/cuda/common.cuh) as the PTX comment prints it

ENTRY_REPORT = re.compile(r"^ptxas info\s*: Compiling entry function '(\S+)' for '(sm_\d+)'")
PROPERTIES = re.compile(r"^ptxas info\s*: Function properties for (\S+)")
SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"^ptxas info\s*: Used (\d+) registers(.*)")
STATIC_SHARED = re.compile(r"(\d+) bytes smem")
PTX_ENTRY = re.compile(r"^\.(?:visible |weak )?\.?entry (\S+?)\(")
MAXNTID = re.compile(r"^\s*\.maxntid (\d+), (\d+), (\d+)")
DECLARED = re.compile(r"// mixgpt launch limits: (\d+) threads, (-?\d+) bytes")

Kernel = collections.namedtuple("Kernel", "name arch registers spill_stores spill_loads static_shared")
# A kernel as the table shows it: its readable name, report and declaration, and the verdict.
Row = collections.namedtuple("Row", "name kernel threads bound dynamic verdict")


def read_report(path):
    """The kernels of one ptxas report, and {(function, arch): (spill stores, spill loads)} of every
    function, those the kernels call included (reported after them, by the same ptxas run)."""
    kernels, spills = [], {}
    entry = arch = function = None
    for line in open(path, encoding="utf-8"):
        if match := ENTRY_REPORT.match(line):
            entry, arch = match.groups()
        elif match := PROPERTIES.match(line):
            function = match.group(1)
        elif match := SPILLS.search(line):
            spills[(function, arch)] = (int(match.group(1)), int(match.group(2)))
        elif (match := USED.match(line)) and entry is not None:
            shared = STATIC_SHARED.search(match.group(2))
            stores, loads = spills.get((entry, arch), (0, 0))
            kernels.append(Kernel(entry, arch, int(match.group(1)), stores, loads,
                                  int(shared.group(1)) if shared else 0))
            entry = None
    return kernels, spills


def read_ptx(path):
    """{kernel: (declared threads, declared dynamic bytes, __launch_bounds__)}, None where absent."""
    kernels, name = {}, None
    for line in open(path, encoding="utf-8"):
        if match := PTX_ENTRY.match(line):
            name = match.group(1)
            kernels[name] = [None, None, None]
        elif name is None:
            continue
        elif match := MAXNTID.match(line):
            x, y, z = (int(v) for v in match.groups())
            kernels[name][2] = x * y * z
        elif (match := DECLARED.search(line)) and kernels[name][0] is None:
            kernels[name][0], kernels[name][1] = int(match.group(1)), int(match.group(2))
    return {name: tuple(values) for name, values in kernels.items()}


def readable_names(mangled):
    """'flash::forward_kernel<__nv_bfloat16, 64>' for each mangled name (c++filt, in one call)."""
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True, check=True)
    names = {}
    for name, line in zip(mangled, out.stdout.splitlines()):
        line = re.sub(r"\(anonymous namespace\)::|mixgpt::cuda::|CUB_\d+_SM_[\d_]+::|detail::radix_sort::", "",
                      line)
        names[name] = without_parameters(re.sub(r"^void ", "", line))
    return names


def without_parameters(signature):
    """The name and template arguments of a demangled signature: up to its first '(' outside <>."""
    depth = 0
    for index, char in enumerate(signature):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth == 0:
            return signature[:index]
    return signature


def block_registers(registers, threads):
    per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
    return per_warp * -(-threads // WARP)


def verdict(kernel, threads, dynamic, bound):
    """'ok', or why a launch the kernel declares cannot run."""
    if threads is None:
        return "declares no launch limits (declare_launch_limits)"
    problems = []
    if threads > MAX_THREADS:
        problems.append(f"{threads} threads per block, above {MAX_THREADS}")
    if threads > UNBOUNDED_THREADS and bound is None:
        problems.append(f"launched with {threads} threads and no __launch_bounds__")
    if bound is not None and threads > bound:
        problems.append(f"launched with {threads} threads, above its __launch_bounds__({bound})")
    if (needed := block_registers(kernel.registers, threads)) > REGISTERS_PER_BLOCK:
        problems.append(f"{kernel.registers} registers x {threads} threads take {needed} registers, "
                        f"above {REGISTERS_PER_BLOCK} a block")
    optin = SHARED_OPTIN[kernel.arch]
    if dynamic == DEVICE_LIMIT and kernel.static_shared > 0:
        problems.append(f"{kernel.static_shared} bytes of static shared memory, which its launcher's check "
                        "of the dynamic part against the device's limit leaves out")
    elif dynamic != DEVICE_LIMIT and kernel.static_shared + dynamic > optin:
        problems.append(f"{kernel.static_shared} + {dynamic} bytes of shared memory, above {optin} "
                        f"on {kernel.arch}")
    if kernel.spill_stores or kernel.spill_loads:
        problems.append(f"spills {kernel.spill_stores} bytes (stores), {kernel.spill_loads} (loads)")
    return "; ".join(problems) or "ok"


def check_source(build, source, failures):
    """The rows of one kernels/cuda/*.cu; its failures appended to `failures`."""
    stem = os.path.basename(source)[: -len(".cu")]
    report = os.path.join(build, "obj", "kernels", "cuda", stem + ".cu.resources")
    ptx = os.path.join(build, "ptx", "kernels", "cuda", stem + ".ptx")
    missing = [path for path in (report, ptx) if not os.path.exists(path)]
    if missing:
        failures.extend(f"{source}: no {path} (make {path})" for path in missing)
        return []
    kernels, spills = read_report(report)
    declarations = read_ptx(ptx)
    names = readable_names(sorted({k.name for k in kernels} | {function for function, _ in spills}))
    rows = []
    for kernel in kernels:
        name = names[kernel.name]
        if kernel.arch not in SHARED_OPTIN:
            failures.append(f"{name}: no shared memory limit known for {kernel.arch} (SHARED_OPTIN)")
        elif name.startswith("cub::"):
            rows.append(Row(name, kernel, None, None, None, "CUB's launch"))
        else:
            threads, dynamic, bound = declarations.get(kernel.name, (None, None, None))
            rows.append(Row(name, kernel, threads, bound, dynamic, verdict(kernel, threads, dynamic, bound)))
            if rows[-1].verdict != "ok":
                failures.append(f"{name} on {kernel.arch}: {rows[-1].verdict}")
    entries = {k.name for k in kernels}
    for (function, arch), (stores, loads) in sorted(spills.items()):
        if (stores or loads) and function not in entries and not names[function].startswith("cub::"):
            failures.append(f"{names[function]} on {arch}: spills {stores} bytes (stores), {loads} (loads)")
    return rows


def threads_text(row):
    if row.threads is None:
        return "CUB's" if row.verdict == "CUB's launch" else "-"
    return f"{row.threads}" + (f" ({row.bound})" if row.bound is not None else "")


def dynamic_text(row):
    if row.dynamic is None:
        return "CUB's" if row.verdict == "CUB's launch" else "-"
    return "device limit" if row.dynamic == DEVICE_LIMIT else str(row.dynamic)


def print_rows(rows):
    print(f"{'kernel':<72} {'arch':<5} {'regs':>4} {'spills':>7} {'smem':>6} {'threads (bound)':>15} "
          f"{'dyn smem':>12}  verdict")
    for row in rows:
        k = row.kernel
        print(f"{row.name[:72]:<72} {k.arch:<5} {k.registers:>4} {k.spill_stores:>3}/{k.spill_loads:<3} "
              f"{k.static_shared:>6} {threads_text(row):>15} {dynamic_text(row):>12}  {row.verdict}")


BEGIN_MARKER = "<!-- launch resources: generated by scripts/check_launch_resources.py, do not edit -->"
END_MARKER = "<!-- end of launch resources -->"


def joined(values):
    return ", ".join(dict.fromkeys(values))


def table_lines(rows, toolkit):
    """The README's table: one row per kernel template and architecture, after a headline."""
    templates = list(dict.fromkeys(row.name.split("<")[0] for row in rows))
    groups = {}
    for row in rows:
        groups.setdefault((row.name.split("<")[0], row.kernel.arch), []).append(row)
    groups = {key: groups[key] for key in sorted(groups, key=lambda key: (templates.index(key[0]), key[1]))}
    archs = sorted({row.kernel.arch for row in rows})
    ours = [row for row in rows if row.verdict != "CUB's launch"]
    most_registers = max(ours, key=lambda row: row.kernel.registers)
    shared = [row for row in ours if row.dynamic not in (None, DEVICE_LIMIT)]
    most_shared = max(shared, key=lambda row: row.kernel.static_shared + row.dynamic)
    spilling = [row for row in rows if row.kernel.spill_stores or row.kernel.spill_loads]
    failing = [row for row in ours if row.verdict != "ok"]
    lines = [
        f"{len(rows) // len(archs)} kernels ({len(templates)} templates) on {' and '.join(archs)}, "
        f"built by {toolkit or 'the toolkit of the build'}. Most registers: "
        f"{most_registers.kernel.registers} a thread (`{most_registers.name}`, {most_registers.kernel.arch}). "
        f"Most shared memory declared: {most_shared.kernel.static_shared + most_shared.dynamic} bytes a block "
        f"(`{most_shared.name}`). Spills: {len(spilling) or 'none'}. "
        + (f"{len(failing)} launches that cannot run." if failing else "Every declared launch fits."),
        "",
        "| kernel | instantiations | arch | registers | spills (bytes) | static smem (bytes) "
        "| max threads launched (`__launch_bounds__`) | max dynamic smem requested (bytes) | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (template, arch), members in groups.items():
        registers = sorted({row.kernel.registers for row in members})
        stores = sum(row.kernel.spill_stores for row in members)
        loads = sum(row.kernel.spill_loads for row in members)
        verdicts = {row.verdict for row in members}
        lines.append(
            f"| `{template}` | {len(members)} | {arch} | "
            + (f"{registers[0]}" if len(registers) == 1 else f"{registers[0]}–{registers[-1]}")
            + f" | {f'{stores}/{loads}' if stores or loads else '0'} "
            f"| {max(row.kernel.static_shared for row in members)} "
            f"| {joined(threads_text(row) for row in members)} | {joined(dynamic_text(row) for row in members)} "
            f"| {verdicts.pop() if len(verdicts) == 1 else 'FAIL'} |")
    return lines


def write_readme(path, rows, toolkit):
    text = open(path, encoding="utf-8").read()
    begin, end = text.find(BEGIN_MARKER), text.find(END_MARKER)
    if begin < 0 or end < begin:
        sys.exit(f"check_launch_resources: {path} has no table markers ({BEGIN_MARKER} ... {END_MARKER})")
    table = "\n".join([BEGIN_MARKER, ""] + table_lines(rows, toolkit) + [""])
    with open(path, "w", encoding="utf-8") as out:
        out.write(text[:begin] + table + "\n" + text[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("build", nargs="?", default="build", help="the build folder (default: build)")
    parser.add_argument("--readme", help="rewrite the table between the markers of this file")
    parser.add_argument("--toolkit", default="", help="the nvcc that made the reports, for the table's headline")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = sorted(os.path.relpath(path, root) for path in glob.glob(os.path.join(root, "kernels/cuda/*.cu")))
    failures = []
    rows = [row for source in sources for row in check_source(args.build, source, failures)]
    print_rows(rows)
    if args.readme and rows:
        write_readme(args.readme, rows, args.toolkit)
    for failure in failures:
        print(f"check_launch_resources: {failure}", file=sys.stderr)
    archs = ", ".join(sorted({row.kernel.arch for row in rows}))
    if failures:
        print(f"check_launch_resources: {len(failures)} check(s) failed over {len(rows)} kernels x architectures")
        return 1
    print(f"check_launch_resources: every declared launch fits its registers and shared memory, no spills, "
          f"over {len(rows)} kernels x architectures ({archs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
