#!/usr/bin/env python3
"""Verdicts of the acceptance jobs: each job's output against the figure ``clusterctl report`` predicted.

Copied verbatim into the render as ``acceptance/check.py`` (standard library only). Run it in the directory the
jobs were submitted from (their ``%x-%j*.out`` files are there):

    python3 check.py [--expected expected.json] [DIRECTORY]

It prints one ``PASS``/``FAIL``/``MISSING`` line per job with the measured and the expected figure, reads the
newest run of each job (highest job id), and exits 1 unless every job passed. Output formats read:

- nccl-tests: the result table (``size count type redop root time algbw busbw #wrong`` out-of-place, then the
  same in-place); the verdict reads the out-of-place busbw of the row of the expected size, and fails on any
  ``#wrong`` other than 0 (NVIDIA/nccl-tests README, doc/PERFORMANCE.md);
- ib_write_bw (perftest, ``--report_gbits``): the row under ``#bytes #iterations BW peak[Gb/sec]
  BW average[Gb/sec] MsgRate[Mpps]``, average column; Gb = 1e9 bits;
- ``dcgmi diag -j``: every ``status`` of the JSON document (DCGM 3.x ``"DCGM GPU Diagnostic"``, 4.x
  ``"DCGM Diagnostic"``), fail on any FAIL or a ``runtime_error``;
- ibdiagnet: fail on any ``-E-`` line (ibdiagnet's error prefix);
- HPL: the ``T/V N NB P Q Time Gflops`` result line and the residual check line ending ``PASSED``/``FAILED``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

_JOB_ID = re.compile(r"-(\d+)(?:-.*)?\.out$")
"""after the job name: -<job id>.out, or -<job id>-<step part>.out"""
_HPL_RESULT = re.compile(r"^W\w+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)")
_HPL_RESIDUAL = re.compile(r"\|\|Ax-b\|\|.*\.\.\.\.\.\.\s+(PASSED|FAILED)")
_GB = 1e9


class Output(str):
    """An output file's text that knows the file's name, so a verdict can name the node or rail that failed."""

    name = ""


def _names(texts: list[str]) -> str:
    """The file names of ``texts`` (those read by :func:`verdicts`), at most eight, for a note."""
    names = [getattr(t, "name", "") for t in texts]
    shown = ", ".join(n for n in names[:8] if n)
    return shown + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def nccl_rows(text: str) -> list[dict]:
    """The rows of an nccl-tests result table: size, out-of-place busbw and #wrong (in-place likewise)."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 13 or line.lstrip().startswith("#") or not fields[0].isdigit():
            continue
        try:
            rows.append({"bytes": int(fields[0]), "busbw": float(fields[7]), "wrong": fields[8],
                         "busbw_in_place": float(fields[11]), "wrong_in_place": fields[12]})
        except ValueError:
            continue
    return rows


def ib_write_bw_average(text: str) -> float | None:
    """The average bandwidth in Gb/s of a perftest bandwidth report (None without a Gb/sec result row)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "BW average[Gb/sec]" in line:
            for row in lines[i + 1:]:
                fields = row.split()
                if len(fields) >= 4 and fields[0].isdigit():
                    return float(fields[3])
    return None


def dcgm_statuses(text: str) -> list[str] | None:
    """Every test status of the ``dcgmi diag -j`` documents in ``text`` (upper case; ``RUNTIME_ERROR`` for a run
    that did not start), None when no diagnostic document is found."""
    decoder = json.JSONDecoder()
    found, pos, statuses = False, 0, []
    while (start := text.find("{", pos)) >= 0:
        try:
            doc, pos = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        report = doc.get("DCGM GPU Diagnostic", doc.get("DCGM Diagnostic")) if isinstance(doc, dict) else None
        if report is None:
            continue
        found = True
        if report.get("runtime_error"):
            statuses.append("RUNTIME_ERROR")
        statuses += _statuses(report)
    return statuses if found else None


def _statuses(node) -> list[str]:
    if isinstance(node, dict):
        own = [str(node["status"]).upper()] if isinstance(node.get("status"), str) else []
        return own + [s for k, v in node.items() if k != "status" for s in _statuses(v)]
    if isinstance(node, list):
        return [s for v in node for s in _statuses(v)]
    return []


def hpl_result(text: str) -> tuple[float | None, list[str]]:
    """(the Gflops of the last result line, every residual check verdict)."""
    gflops = None
    for line in text.splitlines():
        m = _HPL_RESULT.match(line.strip())
        if m:
            gflops = float(m.group(6))
    return gflops, _HPL_RESIDUAL.findall(text)


def judge_nccl(job: dict, texts: list[str]) -> tuple[bool, str]:
    if job.get("units"):  # one output file per NVLink domain: each is judged
        tables = [t for t in texts if nccl_rows(t)]
        results = [judge_nccl({**job, "units": 0}, [t]) for t in tables]
        failed = sum(1 for ok, _ in results if not ok)
        ok = len(tables) == job["units"] and failed == 0
        bad = [t for t, (good, _) in zip(tables, results) if not good]
        worst = next((f"first failing: {n}" for good, n in results if not good), "")
        worst += f" ({_names(bad)})" if bad and _names(bad) else ""
        return ok, f"{len(tables)} of {job['units']} domains reported, {failed} below" + (f"; {worst}" if worst else "")
    rows = [r for t in texts for r in nccl_rows(t)]
    want = job["expected_busbw_gb_per_s"] * job["pass_fraction"]
    row = next((r for r in rows if r["bytes"] == job["bytes"]), None)
    if row is None:
        return False, f"no result row of {job['bytes']} bytes"
    wrong = [w for r in rows for w in (r["wrong"], r["wrong_in_place"]) if w not in ("0", "N/A")]
    ok = row["busbw"] >= want and not wrong
    return ok, (f"busbw {row['busbw']:g} GB/s at {job['bytes']} bytes, expected >= {want:.3f} "
                f"({job['pass_fraction']:g} x {job['expected_busbw_gb_per_s']:g})"
                + (f"; {len(wrong)} rows with wrong results" if wrong else ""))


def judge_ib_write_bw(job: dict, texts: list[str]) -> tuple[bool, str]:
    want = job["expected_gb_per_s"] * job["pass_fraction"] * 8
    measured = [(f, t) for f, t in ((ib_write_bw_average(t), t) for t in texts) if f is not None]
    runs = job["pairs"] * len(job["rails"])
    if not measured:
        return False, "no ib_write_bw result (run with --report_gbits)"
    low, where = min(measured, key=lambda m: m[0])
    ok = low >= want and len(measured) == runs
    at = f" ({_names([where])})" if _names([where]) else ""
    return ok, (f"{len(measured)} of {runs} pair-rail runs, lowest {low:g} Gb/s{at}, expected >= {want:.3f} Gb/s "
                f"({job['pass_fraction']:g} x {job['expected_gb_per_s']:g} GB/s)")


def judge_dcgm(job: dict, texts: list[str]) -> tuple[bool, str]:
    reports = [(t, s) for t, s in ((t, dcgm_statuses(t)) for t in texts) if s is not None]
    bad = [t for t, s in reports if any(x.startswith("FAIL") or x == "RUNTIME_ERROR" for x in s)]
    ok = len(reports) == job["nodes"] and not bad
    note = f"{len(reports)} of {job['nodes']} nodes reported, {len(bad)} with a failed test (level {job['level']})"
    return ok, note + (f": {_names(bad)}" if bad and _names(bad) else "")


def judge_ibdiagnet(job: dict, texts: list[str]) -> tuple[bool, str]:
    lines = [line for t in texts for line in t.splitlines()]
    errors = sum(1 for line in lines if line.startswith("-E-"))
    warnings = sum(1 for line in lines if line.startswith("-W-"))
    ran = any(line.startswith("-I-") for line in lines)
    return ran and errors == 0, (f"{errors} errors, {warnings} warnings against the planned cabling of "
                                 f"{job['fabric']}" + ("" if ran else " (no ibdiagnet output)"))


def judge_hpl(job: dict, texts: list[str]) -> tuple[bool, str]:
    gflops, residuals = hpl_result("\n".join(texts))
    if gflops is None:
        return False, "no HPL result line"
    ok = bool(residuals) and all(r == "PASSED" for r in residuals)
    note = f"{gflops:g} Gflops, residual {'PASSED' if ok else 'FAILED or missing'}"
    if job.get("expected_gflops"):
        want = job["expected_gflops"] * job["pass_fraction"]
        ok = ok and gflops >= want
        note += f", expected >= {want:.3f} ({job['pass_fraction']:g} x {job['expected_gflops']:g})"
    return ok, note


JUDGES = {"nccl": judge_nccl, "ib_write_bw": judge_ib_write_bw, "dcgm": judge_dcgm, "ibdiagnet": judge_ibdiagnet,
          "hpl": judge_hpl}


def newest_outputs(directory: str, job: str) -> list[str]:
    """The output files of the newest run of ``job`` (``<job>-<jobid>.out`` and ``<job>-<jobid>-*.out``)."""
    runs: dict[int, list[str]] = {}
    for path in glob.glob(os.path.join(glob.escape(directory), glob.escape(job) + "-*.out")):
        m = _JOB_ID.fullmatch(os.path.basename(path)[len(job):])
        if m:
            runs.setdefault(int(m.group(1)), []).append(path)
    return sorted(runs[max(runs)]) if runs else []


def verdicts(expected: dict, directory: str) -> list[tuple[str, str, str]]:
    """(verdict, job, note) per expected job."""
    out = []
    for name, job in sorted(expected["jobs"].items()):
        paths = newest_outputs(directory, name)
        if not paths:
            out.append(("MISSING", name, "no output"))
            continue
        texts = []
        for path in paths:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = Output(f.read())
            text.name = os.path.basename(path)
            texts.append(text)
        ok, note = JUDGES[job["kind"]](job, texts)
        out.append(("PASS" if ok else "FAIL", name, note))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Judge the acceptance jobs' outputs against the report.")
    parser.add_argument("directory", nargs="?", default=".", help="where the jobs' .out files are")
    parser.add_argument("--expected", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                           "expected.json"))
    args = parser.parse_args(argv)
    with open(args.expected, encoding="utf-8") as f:
        expected = json.load(f)
    results = verdicts(expected, args.directory)
    for verdict, name, note in results:
        print(f"{verdict:<8}{name}: {note}")
    return 0 if results and all(v == "PASS" for v, _, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
