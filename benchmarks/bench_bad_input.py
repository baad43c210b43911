"""Benchmark the bad inputs of issues 9 and 24 through the real command line: time, memory, exit code, output size.

Each case is written into a temporary directory and run as ``python -m clusterctl COMMAND FILE`` in a fresh
wrapper process whose only child is that command, so ``ru_maxrss`` of ``RUSAGE_CHILDREN`` is the command's
own peak (as ``/usr/bin/time -v`` reports it). Wall time is what a user waits for; CPU time (user + system)
is the steadier figure on a shared machine. A case passes when the command exits 2 with a FILE:LINE
location, in under 2 s and 300 MB; a run still going after ``--timeout`` seconds is killed and shown as such.
Issue 24's cases (one per payload class of the meaning sweep, ``MEANING``) run ``render`` and may also end in
exit 1 (an error finding, nothing written).

    python benchmarks/bench_bad_input.py
    python benchmarks/bench_bad_input.py --cases alias-bomb dev-zero --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
LAB = (REPO / "blueprints" / "lab-2node.yaml").read_text()
TARGET_S, TARGET_MB = 2.0, 300

_WRAPPER = r"""
import json, resource, subprocess, sys, time
timeout = float(sys.argv[1])
t0 = time.perf_counter()
try:
    r = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    rc, out, err = r.returncode, r.stdout, r.stderr
except subprocess.TimeoutExpired as exc:
    rc, out, err = "timeout", exc.stdout or b"", exc.stderr or b""
wall = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
rss_mb = u.ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else u.ru_maxrss / 1024
print(json.dumps({"wall": wall, "cpu": u.ru_utime + u.ru_stime, "rss_mb": rss_mb, "rc": rc,
                  "out_bytes": len(out) + len(err), "stderr": err[:4000].decode(errors="replace"),
                  "stdout": out[:4000].decode(errors="replace"), "stdout_tail": out[-4000:].decode(errors="replace")}))
"""


# --- the cases: each writes its input into ``work`` and returns the path to pass -----------------------


def alias_bomb(work: Path) -> str:
    """the 400-byte "billion laughs": nine levels of nine aliases (9**9 strings once expanded)"""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return _write(work / "alias-bomb.yaml", "\n".join(lines) + "\n")


def merge_bomb(work: Path) -> str:
    """merge keys (<<: [*m, *m, ...]) eleven levels deep: PyYAML's flatten_mapping grows 9x a level"""
    lines = ["m0: &m0 {k: 1}"] + [f"m{i}: &m{i} {{<<: [" + ",".join([f"*m{i - 1}"] * 9) + "]}" for i in range(1, 12)]
    return _write(work / "merge-bomb.yaml", "\n".join(lines) + "\n")


def _unknown_keys(path: Path, size: int) -> str:
    with path.open("w") as f:
        f.write(LAB)
        i = 0
        while f.tell() < size:
            f.write("".join(f"unknown_key_{j:08d}: 1\n" for j in range(i, i + 1000)))
            i += 1000
    return str(path)


def unknown_keys_50mb(work: Path) -> str:
    """the lab blueprint followed by 50 MB of unknown keys"""
    return _unknown_keys(work / "unknown-50mb.yaml", 50 * 1024 * 1024)


def unknown_keys_4mb(work: Path) -> str:
    """the lab blueprint followed by unknown keys up to 4 MB (under the 4 MiB size limit)"""
    return _unknown_keys(work / "unknown-4mb.yaml", 4_000_000)


def long_line_4mb(work: Path) -> str:
    """one 4 MB scalar (messages quote values: the printer must cut them)"""
    return _write(work / "long-line.yaml", LAB.replace("name: lab", "name: " + "x" * 4_000_000, 1))


def dev_zero(work: Path) -> str:
    """/dev/zero, an endless character device"""
    return "/dev/zero"


def fifo(work: Path) -> str:
    """a FIFO nobody writes to (open() would block forever)"""
    path = work / "fifo.yaml"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def directory(work: Path) -> str:
    """a directory"""
    return str(work)


def deep_nesting(work: Path) -> str:
    """100,000 nested flow lists (PyYAML's recursive composers crash: libyaml's with SIGSEGV)"""
    return _write(work / "deep.yaml", "name: x\nn: " + "[" * 100_000 + "]" * 100_000 + "\n")


def inf_float(work: Path) -> str:
    """`.inf` as a rack profile's power_kw"""
    return _write(work / "inf.yaml", _lab_with("power_kw: 34,", "power_kw: .inf,"))


def nan_float(work: Path) -> str:
    """`.nan` as a rack profile's feed_kw"""
    return _write(work / "nan.yaml", _lab_with("feed_kw: 43.2", "feed_kw: .nan"))


def huge_rack(work: Path) -> str:
    """`units: 10000000` in a rack profile"""
    return _write(work / "units.yaml", _lab_with("units: 48", "units: 10000000"))


def hidden_line_end(work: Path) -> str:
    """the reproducer of issue 24: a U+2028 in a comment hides a storage entry mounting NFS over /etc"""
    scratch = "  - {name: scratch, tier: local, mount: /raid}\n"
    return _write(work / "hidden-line-end.yaml", _lab_with(scratch, scratch + "  # node-local\u2028  - {name: cfg, "
                  "tier: nfs, export: \"head01:/export/etc\", mount: /etc, capacity_tb: 1, read_gb_per_s: 1, "
                  "write_gb_per_s: 1}\n"))


def line_separators_4mb(work: Path) -> str:
    """the lab blueprint followed by 4 MB of comments, each holding a U+2028 (every one is a BP008)"""
    return _write(work / "separators-4mb.yaml", LAB + "# x\u2028\n" * 500_000)


def bidi_comments_4mb(work: Path) -> str:
    """the lab blueprint followed by 4 MB of comments, each holding RLO and a zero-width space"""
    return _write(work / "bidi-4mb.yaml", LAB + "# \u202ex\u200b\n" * 400_000)


def lone_cr_4mb(work: Path) -> str:
    """4 MB of old Mac line ends (lone CR), one at the end of every line"""
    return _write(work / "lone-cr-4mb.yaml", (LAB.replace("\n", "\r") * 4000)[:4_000_000])


def escapes_in_keys(work: Path) -> str:
    """the lab blueprint followed by 40,000 unknown keys (1.3 MB, under the value limit), each a double-quoted
    ESC, RLO and rich markup: the file is ASCII, the keys are not, and every one printed is escaped"""
    keys = "".join(f'"k{j}\\e[2J\\u202e[bold red]": 1\n' for j in range(40_000))
    return _write(work / "escaped-keys.yaml", LAB + keys)


# --- issue 24: well-formed values with a meaning the reviewer does not see (one per payload class of the
# meaning sweep, tests/security/payloads.py). The answer is exit 2 (unreadable) or 1 (an error finding), located.


def _head_named(name: str) -> str:
    """the lab with its head node renamed everywhere (quoted: YAML reads 2130706433 as a number)"""
    text = LAB.replace("head01:", f"{name}:").replace("hostnames: head01", f'hostnames: "{name}"')
    text = text.replace("controllers: head01", f'controllers: "{name}"')
    assert "head01" not in text.replace("# ", ""), text
    return text


def ip_name(work: Path) -> str:
    """the head node named 2130706433 (127.0.0.1 as one number) everywhere"""
    return _write(work / "ip-name.yaml", _head_named("2130706433"))


def reserved_name(work: Path) -> str:
    """the head node named localhost everywhere"""
    return _write(work / "reserved-name.yaml", _head_named("localhost"))


def case_collision(work: Path) -> str:
    """a login node HEAD01 listed before head01"""
    return _write(work / "case-collision.yaml", _lab_with(
        "  - {name: head, type: head,",
        "  - {name: login, type: head, role: login, count: 1, hostnames: HEAD01, racks: lab01}\n"
        "  - {name: head, type: head,"))


def privileged_mount(work: Path) -> str:
    """the local scratch tier at /etc"""
    return _write(work / "mount-etc.yaml", _lab_with("mount: /raid", "mount: /etc"))


def world_range(work: Path) -> str:
    """the in-band pool ::/0"""
    return _write(work / "world-range.yaml", _lab_with("cidr: 10.10.0.0/24", 'cidr: "::/0"'))


def planned_address(work: Path) -> str:
    """the home export served by 10.10.0.17, the first compute node's in-band address"""
    return _write(work / "planned-address.yaml", _lab_with("head01:/export/home", "10.10.0.17:/export/home"))


def plain_http_key(work: Path) -> str:
    """the Slurm repository and its signing key over plain http"""
    return _write(work / "http-key.yaml", _lab_with(
        'install: {kind: debs, path: /srv/slurm-debs, version: "24.05.4-1"}',
        'install: {kind: repo, url: "https://repo.example.com/slurm", key: "http://example.com/key.asc", '
        'suite: jammy, components: [main], version: "24.05.4-1"}'))


def hidden_item(work: Path) -> str:
    """a comment whose U+2028 starts a hidden storage item (PyYAML reads two lines, a diff shows one)"""
    return _write(work / "hidden-item.yaml", _lab_with(
        "  - {name: scratch", "  # home and scratch\u2028  - {name: evil, tier: nfs, export: \"head01:/export/evil\", "
        "mount: /opt/evil, capacity_tb: 1, read_gb_per_s: 1, write_gb_per_s: 1}\n  - {name: scratch"))


def thirty_million_hosts(work: Path) -> str:
    """4 KB: the lab plus thirty node groups of a million hosts each (issue 24: 2.9 GB and 54 s before the
    cap on planned hosts, racks and switches)"""
    groups = "".join(f"  - {{name: g{i:02d}, type: head, count: 1000000, hostnames: 'n{i:02d}x[0000001-1000000]'}}\n"
                     for i in range(30))
    return _write(work / "hosts-30m.yaml", _lab_with("fabrics:\n", groups + "fabrics:\n"))


def _lab_with(old: str, new: str) -> str:
    assert old in LAB, old
    return LAB.replace(old, new, 1)


def _write(path: Path, text: str) -> str:
    path.write_bytes(text.encode())
    return str(path)


CASES: dict[str, tuple[Callable[[Path], str], tuple[str, ...]]] = {
    "alias-bomb": (alias_bomb, ("validate",)),
    "merge-bomb": (merge_bomb, ("validate",)),
    "unknown-keys-50mb": (unknown_keys_50mb, ("validate",)),
    "unknown-keys-4mb": (unknown_keys_4mb, ("validate",)),
    "unknown-keys-4mb-json": (unknown_keys_4mb, ("validate", "--format", "json")),
    "long-line-4mb": (long_line_4mb, ("validate",)),
    "dev-zero": (dev_zero, ("validate",)),
    "fifo": (fifo, ("validate",)),
    "directory": (directory, ("validate",)),
    "deep-nesting": (deep_nesting, ("validate",)),
    "inf-float": (inf_float, ("validate",)),
    "inf-float-report": (inf_float, ("report", "--format", "json")),
    "nan-float": (nan_float, ("validate",)),
    "units-10M": (huge_rack, ("validate",)),
    "units-10M-report": (huge_rack, ("report", "--format", "json")),
    "hidden-line-end": (hidden_line_end, ("validate",)),
    "separators-4mb": (line_separators_4mb, ("validate",)),
    "separators-4mb-sarif": (line_separators_4mb, ("validate", "--format", "sarif")),
    "bidi-4mb": (bidi_comments_4mb, ("validate",)),
    "lone-cr-4mb": (lone_cr_4mb, ("validate",)),
    "escaped-keys": (escapes_in_keys, ("validate",)),
    "ip-name": (ip_name, ("render",)),
    "reserved-name": (reserved_name, ("render",)),
    "case-collision": (case_collision, ("render",)),
    "mount-etc": (privileged_mount, ("render",)),
    "world-range": (world_range, ("render",)),
    "planned-address": (planned_address, ("render",)),
    "http-key": (plain_http_key, ("render",)),
    "hidden-item": (hidden_item, ("render",)),
    "hosts-30M": (thirty_million_hosts, ("validate",)),
    "hosts-30M-render": (thirty_million_hosts, ("render", "-o", "/nonexistent/never-written")),
}
MEANING = {"ip-name", "reserved-name", "case-collision", "mount-etc", "world-range", "planned-address", "http-key",
           "hidden-item"}
"""issue 24's cases: `render` must refuse them (exit 2, or 1 for an error finding) and write nothing"""


def measure(path: str, command: tuple[str, ...], timeout: float) -> dict:
    """One ``python -m clusterctl COMMAND PATH [options]`` in a fresh wrapper process (``render`` writes into a
    directory beside the input)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    extra = ("-o", path + ".out") if command[0] == "render" else ()
    cmd = [sys.executable, "-c", _WRAPPER, str(timeout), sys.executable, "-m", "clusterctl", command[0], path,
           *command[1:], *extra]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def located(result: dict, path: str) -> bool:
    """The output names the input as FILE:LINE(:COL), or JSON's file and line, or SARIF's uri and startLine."""
    if re.search(re.escape(path) + r":\d+", result["stderr"]):
        return True
    if re.search(r'"file": ' + re.escape(json.dumps(path)) + r',\s*"line": \d+', result["stdout"]):
        return True
    sarif = r'"uri": ' + re.escape(json.dumps(quote(path))) + r'\s*\},\s*"region": \{\s*"startLine": \d+'
    return re.search(sarif, result["stdout_tail"]) is not None  # the results follow ~90 rule descriptors


def judge(run: dict, where: bool, rss: float, codes: tuple[int, ...] = (2,)) -> str:
    """"ok"; "ok (CPU)" when only the wall time is over, which on a shared machine is other processes'
    doing (the CPU time is under the target); "MISSES" otherwise."""
    if run["rc"] not in codes or not where or rss >= TARGET_MB or run["cpu"] >= TARGET_S:
        return "MISSES"
    return "ok" if run["wall"] < TARGET_S else "ok (CPU)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--runs", type=int, default=1, help="runs per case (best wall time is shown)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a run is killed")
    args = ap.parse_args(argv)
    ok = True
    print(f"{'case':<22} {'command':<17} {'exit':>7} {'wall s':>7} {'CPU s':>6} {'peak MB':>8} {'output B':>9} "
          f"{'located':>7}  verdict")
    with tempfile.TemporaryDirectory(prefix="clusterctl-bad-input-") as tmp:
        work = Path(tmp)
        for name in args.cases:
            make, command = CASES[name]
            path = make(work)
            runs = [measure(path, command, args.timeout) for _ in range(args.runs)]
            best = min(runs, key=lambda r: r["wall"])
            rss = max(r["rss_mb"] for r in runs)
            codes = (1, 2) if name in MEANING else (2,)
            where = located(best, path) if best["rc"] in codes else False
            verdict = judge(best, where, rss, codes)
            ok &= verdict != "MISSES"
            print(f"{name:<22} {' '.join(command)[:17]:<17} {best['rc']!s:>7} {best['wall']:>7.2f} "
                  f"{best['cpu']:>6.2f} {rss:>8.0f} {best['out_bytes']:>9,} {'yes' if where else 'no':>7}  {verdict}")
    print(f"target: exit 2 (issue 24's render cases: 1 or 2) with FILE:LINE, "
          f"under {TARGET_S} s and {TARGET_MB} MB each; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
