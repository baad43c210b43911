"""Our host lists and YAML loader against the maintained libraries: python-hostlist and ruamel.yaml (issue 15).

Both libraries are optional here: a section whose library is not importable prints "not installed" and its
own figures only. To measure the libraries without touching the project's environment, install them into a
private directory and put it on PYTHONPATH:

    pip install --target DIR python-hostlist ruamel.yaml [ruamel.yaml.clib]
    PYTHONPATH=DIR python benchmarks/bench_libraries.py
    PYTHONPATH=DIR python benchmarks/bench_libraries.py --runs 5 --only hostlist

What is compared (each figure is the best of --runs, CPU time of this process):
- host lists: expand and compress at 100,000 and 200,000 names; refusing an expression that names too many
  hosts before building them (``count``); deep brackets; the messages of bad expressions; and whether the
  library gives the same output as ours for every expand/compress call made while rendering the shipped
  blueprints (our compress output is in the golden files).
- YAML: YAML 1.1 (PyYAML, ours) against 1.2 (ruamel's default) on the scalars where they differ; duplicate
  and merge keys; the bounded inputs of issue 9 (alias bomb, 100,000 nested ``[``); positions of keys and
  values; and load time of the largest shipped blueprint, the 200,000- and 700,000-GPU synthetic blueprints
  of bench_validate.py, and a 1 MB document.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(1, str(REPO / "benchmarks"))

from clusterctl import hostlist as ours  # noqa: E402
from clusterctl.errors import BlueprintError  # noqa: E402
from clusterctl.source import load_yaml_text  # noqa: E402


def _optional(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def best(fn, runs: int) -> float:
    """Best CPU seconds of ``runs`` calls of ``fn``."""
    times = []
    for _ in range(runs):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def peak_mb(fn) -> tuple[float, float, object]:
    """(CPU s, peak traced MB, result or the exception) of one call of ``fn``."""
    tracemalloc.start()
    t = time.process_time()
    try:
        out = fn()
    except Exception as exc:  # noqa: BLE001 - the exception is the figure
        out = exc
    cpu = time.process_time() - t
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return cpu, peak, out


def outcome(x: object) -> str:
    if isinstance(x, BaseException):
        return f"{type(x).__name__}: {str(x).splitlines()[0] if str(x) else ''}"[:110]
    if isinstance(x, list):
        return f"{len(x):,} names"
    return repr(x)[:110]


# ---------------------------------------------------------------- host lists

def _rendered_calls() -> tuple[list[str], list[list[str]]]:
    """Every expand input and compress input made while loading, planning and rendering the shipped blueprints."""
    from clusterctl.blueprint.load import load_blueprint
    from clusterctl.output import diagnostics
    from clusterctl.plan import expand
    from clusterctl.targets import render_targets

    expands: list[str] = []
    compresses: list[list[str]] = []
    real_expand, real_compress = ours.expand, ours.compress

    def rec_expand(expr):
        expands.append(expr)
        return real_expand(expr)

    def rec_compress(names):
        names = list(names)
        compresses.append(names)
        return real_compress(names)

    ours.expand, ours.compress, diagnostics.compress = rec_expand, rec_compress, rec_compress
    try:
        for path in sorted((REPO / "blueprints").glob("*.yaml")):
            render_targets(expand(load_blueprint(path)))
    finally:
        ours.expand, ours.compress, diagnostics.compress = real_expand, real_compress, real_compress
    return expands, compresses


BAD_EXPRESSIONS = ("gpu[1-", "gpu[4-1]", "gpu[a-b]", "gpu$[1-2]", "gpu[1-2],,login1", "gpu[1-2] x", "g[1[2]]")
EDGE_EXPRESSIONS = ("gpu[1-2],gpu1", "gpu[01-3]", "n[8-10]", "a[1-2]b[1-2]", " head01 , head02 ")


def bench_hostlist(runs: int) -> None:
    lib = _optional("hostlist")
    print("== host lists: clusterctl.hostlist vs python-hostlist")
    if lib is None or not hasattr(lib, "expand_hostlist"):
        print("python-hostlist: not installed (pip install --target DIR python-hostlist; PYTHONPATH=DIR)")
    else:
        print(f"python-hostlist {getattr(lib, '__version__', '?')}: expand_hostlist(allow_duplicates=True), "
              f"collect_hostlist; its MAX_SIZE is {lib.MAX_SIZE:,} names per range")
    print()
    cases = {n: f"gpu[{1:0{len(str(n))}d}-{n}]" for n in (100_000, 200_000)}
    cases["2-D 200,000"] = "r[001-200]n[0001-1000]"
    print(f"{'expand':<22} {'ours s':>8} {'library s':>10}  library with its default MAX_SIZE")
    for label, expr in cases.items():
        t_ours = best(lambda: ours.expand(expr), runs)
        row = f"{label if isinstance(label, str) else f'{label:,} names':<22} {t_ours:>8.3f}"
        if lib is not None:
            default = lib.MAX_SIZE
            try:
                lib.expand_hostlist(expr, allow_duplicates=True)
                refused = "expands"
            except lib.BadHostlist as exc:
                refused = f"refuses: {exc}"
            lib.MAX_SIZE = 10**7
            try:
                assert lib.expand_hostlist(expr, allow_duplicates=True) == ours.expand(expr)
                row += f" {best(lambda: lib.expand_hostlist(expr, allow_duplicates=True), runs):>10.3f}  {refused}"
            finally:
                lib.MAX_SIZE = default
        print(row)
    print()
    print(f"{'compress':<22} {'ours s':>8} {'library s':>10}  same text")
    for n in (100_000, 200_000):
        names = [f"gpu{k:06d}" for k in range(1, n + 1)]
        shuffled = names[::2] + names[1::2]  # two interleaved halves: ours keeps order, the library sorts
        for label, lst in ((f"{n:,} in order", names), (f"{n:,} odd then even", shuffled)):
            row = f"{label:<22} {best(lambda: ours.compress(lst), runs):>8.3f}"
            if lib is not None:
                same = lib.collect_hostlist(lst) == ours.compress(lst)
                row += f" {best(lambda: lib.collect_hostlist(lst), runs):>10.3f}  {'yes' if same else 'no'}"
            print(row)
    print()
    print("refusing too many names before building them (clusterctl plans at most 1,000,000 per list):")
    bomb = ",".join(f"n{k}x[00001-99999]" for k in range(20))  # 20 ranges under the library's MAX_SIZE each
    t = best(lambda: ours.count(bomb), runs)
    print(f"  {len(bomb)}-byte list of 20 ranges ({ours.count(bomb):,} names): ours count() {t * 1e6:.0f} us, "
          f"refused before expanding")
    if lib is not None:
        cpu, mb, out = peak_mb(lambda: lib.expand_hostlist(bomb, allow_duplicates=True))
        print(f"  library: no count without expanding; expand_hostlist {outcome(out)} in {cpu:.2f} s, "
              f"peak {mb:.0f} MB traced (the total over comma parts is not bounded)")
    deep = "x" + "[1]" * 3000
    print(f"  {len(deep):,}-byte name with 3,000 bracket groups: ours count() -> {outcome(_call(ours.count, deep))}")
    if lib is not None:
        print(f"  library expand_hostlist -> {outcome(_call(lib.expand_hostlist, deep))}")
    print()
    print("bad expressions (ours: HostlistError; library: BadHostlist; the caller adds file:line:col from the path)")
    for expr in BAD_EXPRESSIONS + EDGE_EXPRESSIONS:
        row = f"  {expr!r:<22} ours: {outcome(_call(ours.expand, expr))}"
        if lib is not None:
            row += f"\n  {'':<22} lib:  {outcome(_call(lambda e: lib.expand_hostlist(e, allow_duplicates=True), expr))}"
        print(row)
    if lib is None:
        return
    print()
    expands, compresses = _rendered_calls()
    e_diff = [e for e in expands if _call(lambda x: lib.expand_hostlist(x, allow_duplicates=True), e)
              != _call(ours.expand, e)]
    c_diff = [n for n in compresses if _call(lib.collect_hostlist, n) != ours.compress(n)]
    print(f"shipped blueprints, load + plan + render: {len(expands):,} expand calls, {len(e_diff)} differ; "
          f"{len(compresses):,} compress calls, {len(c_diff)} differ")
    for names in c_diff[:4]:
        print(f"  {len(names):,} names: ours {ours.compress(names)[:60]!r} "
              f"library {lib.collect_hostlist(names)[:60]!r}")


def _call(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome
        return exc


# ---------------------------------------------------------------- YAML

SCALARS = ("yes", "no", "on", "off", "y", "True", "0755", "0o755", "1e3", "1.0e+3", "1_000", "0x1F", "1:30",
           "24.10", "2024-01-02", "~", ".inf", "=")


def _ours(text: str):
    try:
        return load_yaml_text(text, "x.yaml")[0]
    except BlueprintError as exc:
        p = exc.problems[0]
        return ValueError(f"{exc.source.file}:{p.position.line}:{p.position.col} {p.message}" if p.position
                          else p.message)


def _ruamel(text: str, version=None, typ="rt", pure=True):
    import warnings

    from ruamel.yaml import YAML

    warnings.filterwarnings("ignore", module="ruamel")  # 1e3 under version 1.1 warns on every load

    y = YAML(typ=typ, pure=pure)
    if version:
        y.version = version
    return y.load(text)


def _k(doc):
    return doc["k"] if isinstance(doc, dict) else doc


def _positions(node, path=(), out=None) -> dict:
    """Key and value positions of every path of a ruamel round-trip document (what our SourceMap holds)."""
    out = {} if out is None else out
    if hasattr(node, "lc") and isinstance(node, dict):
        for k, v in node.items():
            out[path + (k,)] = node.lc.value(k) if node.lc.data else None
            _positions(v, path + (k,), out)
    elif hasattr(node, "lc") and isinstance(node, list):
        for i, v in enumerate(node):
            out[path + (i,)] = node.lc.item(i)
            _positions(v, path + (i,), out)
    return out


_APART = """
import sys, time, warnings
warnings.filterwarnings("ignore")
from ruamel.yaml import YAML
text = sys.stdin.read()
t = time.process_time()
try:
    out = YAML(typ="rt", pure=True).load(text)
    seen, todo, n = set(), [out], 0
    while todo and n <= 10**6:  # values reachable with aliases expanded, as a positions walk would visit them
        x = todo.pop()
        n += 1
        todo.extend(x.values() if isinstance(x, dict) else x if isinstance(x, list) else ())
    what = f"loaded, {'over ' if n > 10**6 else ''}{n:,} values with aliases expanded"
except Exception as exc:
    what = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        what += f" (line {mark.line + 1}, column {mark.column + 1})"
print(f"({time.process_time() - t:.2f} s): {what}"[:140])
"""


def _ruamel_apart(text: str) -> str:
    """ruamel's outcome on ``text`` in a child process (a hostile input must not take this one down)."""
    import os
    import subprocess

    r = subprocess.run([sys.executable, "-c", _APART], input=text, capture_output=True, text=True,
                       env=dict(os.environ), timeout=300)
    return r.stdout.strip() or f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}"


def bench_yaml(runs: int) -> None:
    ruamel = _optional("ruamel.yaml")
    print("== YAML: clusterctl.source (PyYAML events, YAML 1.1) vs ruamel.yaml")
    if ruamel is None:
        print("ruamel.yaml: not installed (pip install --target DIR ruamel.yaml; PYTHONPATH=DIR)")
    else:
        clib = _optional("_ruamel_yaml") or _optional("ruamel.yaml.clib._ruamel_yaml")
        print(f"ruamel.yaml {ruamel.__version__}; its C parser (ruamel.yaml.clib): "
              f"{'installed' if clib else 'not installed'}")
    print()
    print(f"{'scalar':<12} {'ours (1.1)':<22} {'ruamel 1.2':<22} {'ruamel version 1.1':<22}")
    for s in SCALARS:
        row = f"{s:<12} {outcome(_k(_call(_ours, f'k: {s}'))):<22}"
        if ruamel is not None:
            row += (f" {outcome(_k(_call(_ruamel, f'k: {s}'))):<22}"
                    f" {outcome(_k(_call(_ruamel, f'k: {s}', (1, 1)))):<22}")
        print(row)
    docs = {
        "duplicate key": "a: 1\nb: 2\na: 3\n",
        "merge key": "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  y: 3\n",
        "alias bomb (9x9)": "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)) + "use: [*a8, *a8]\n",
        "100,000 nested [": "k: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "bad indentation": "a:\n  b: 1\n c: 2\n",
    }
    print()
    for label, text in docs.items():
        cpu, _, out = peak_mb(lambda: _ours(text))
        print(f"{label:<18} ours   ({cpu:.2f} s): {outcome(out)}")
        if ruamel is not None:
            print(f"{'':<18} ruamel {_ruamel_apart(text)}")
    if ruamel is not None:
        doc = _ruamel("a:\n  b: [1, 2]\n  c: x\n")
        print(f"positions (ruamel, 0-based line, col): {_positions(doc)}; a scalar itself carries none "
              f"(type {type(doc['a']['c']).__name__})")
    print()
    import bench_validate

    texts = {"largest shipped": max((REPO / "blueprints").glob("*.yaml"), key=lambda p: p.stat().st_size).read_text()}
    for gpus in (200_000, 700_000):
        texts[f"{gpus:,} GPUs"] = bench_validate.blueprint(gpus)
    texts["1 MB, 15k mappings"] = "hosts:\n" + "".join(
        f"  - {{name: gpu{k:05d}, ip: 10.{k // 65536}.{k // 256 % 256}.{k % 256}, rack: r{k // 8:04d}, u: {k % 8}}}\n"
        for k in range(15_000))
    import yaml

    print(f"{'load':<20} {'KB':>6} {'ours s':>8} {'PyYAML C s':>11} {'ruamel rt s':>12} {'rt+pos s':>9} "
          f"{'ruamel safe s':>14} {'safe C s':>9}")
    for label, text in texts.items():
        row = (f"{label:<20} {len(text) / 1000:>6.0f} {best(lambda: _ours(text), runs):>8.3f}"
               f" {best(lambda: yaml.load(text, Loader=yaml.CSafeLoader), runs):>11.3f}")
        if ruamel is not None:
            rt = best(lambda: _ruamel(text), runs)
            pos = best(lambda: _positions(_ruamel(text)), runs)
            safe = best(lambda: _ruamel(text, typ="safe"), runs)
            try:
                c = f"{best(lambda: _ruamel(text, typ='safe', pure=False), runs):>9.3f}"
            except Exception:  # noqa: BLE001 - no C parser
                c = f"{'-':>9}"
            row += f" {rt:>12.3f} {pos:>9.3f} {safe:>14.3f} {c}"
        print(row)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (best CPU time is reported)")
    ap.add_argument("--only", choices=("hostlist", "yaml"), help="one section")
    args = ap.parse_args(argv)
    if args.only in (None, "hostlist"):
        bench_hostlist(args.runs)
        print()
    if args.only in (None, "yaml"):
        bench_yaml(args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
