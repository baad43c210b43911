"""The design questions on the command line: ``clusterctl compare`` (designs side by side) and ``clusterctl whatif``
(a design with components failed). The work is clusterctl/report/compare.py's and clusterctl/report/whatif.py's."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from clusterctl.blueprint.storage import Workload
from clusterctl.blueprint.training import TrainingSpec
from clusterctl.cli_app import _misuse, _out, _report_document, _validated_or_exit, app
from clusterctl.cli_numbers import bounded_like
from clusterctl.output import finite_json


class TextFormat(str, Enum):
    human = "human"
    markdown = "markdown"
    json = "json"


def _show(d: dict, output: Path | None, fmt: TextFormat, forms) -> None:
    """Print ``d`` in ``fmt``, or write its three files into ``output`` and print the summary; ``forms``: the
    output module (to_text, to_markdown and its writer ``write``: compare_output, whatif_output)."""
    from clusterctl.write import OutputDirError

    if output is not None:
        try:
            forms.write(d, output)
        except OutputDirError as exc:
            raise _misuse(str(exc), exc.hint) from None
    _out(finite_json.dumps(d, indent=2) if fmt is TextFormat.json and output is None else
         forms.to_markdown(d) if fmt is TextFormat.markdown and output is None else forms.to_text(d))


@app.command()
def compare(
    blueprints: Annotated[list[Path], typer.Argument(help="two to eight blueprint YAML files")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="write compare.md, .json, .svg here")] = None,
    fmt: Annotated[TextFormat, typer.Option("--format", help="what to print without -o")] = TextFormat.human,
    model: Annotated[Optional[str], typer.Option(help="train this model preset on every design")] = None,
    global_batch: Annotated[Optional[int], typer.Option(help="sequences per step, on every design",
                                                        callback=bounded_like(TrainingSpec, "global_batch"))] = None,
    tokens_t: Annotated[Optional[float], typer.Option(help="token budget, trillions (default: workload.tokens_t)",
                                                      callback=bounded_like(Workload, "tokens_t"))] = None,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
) -> None:
    """Designs side by side: GPUs used, throughput, MFU, time to train, power, racks, failures, cost of ownership
    and $ per token, the better value marked (docs/cli.md, "compare")."""
    from clusterctl.report import compare as cmp
    from clusterctl.report import compare_output

    if not 2 <= len(blueprints) <= cmp.MAX_DESIGNS:
        raise _misuse(f"compare takes 2 to {cmp.MAX_DESIGNS} blueprints, got {len(blueprints)}",
                      "clusterctl compare A.yaml B.yaml [C.yaml ...]")
    designs = []
    for bp in blueprints:
        loaded, v = _validated_or_exit(bp, suppress, "not compared")
        overrides = {"model": model, "global_batch": global_batch}
        designs.append((v.plan, _report_document(loaded, v, overrides, pictures=False).to_json()))
    d = cmp.comparison([str(b) for b in blueprints], designs, tokens_t)
    _show(d, output, fmt, compare_output)


@app.command()
def whatif(
    blueprint: Annotated[Path, typer.Argument(help="blueprint YAML file")],
    fail: Annotated[Optional[str], typer.Option(help="KIND:NAME[,KIND:NAME...] failed together")] = None,
    each: Annotated[Optional[list[str]], typer.Option(help="fail every component of KIND, one at a time")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="write whatif.md, .json, .svg here")] = None,
    fmt: Annotated[TextFormat, typer.Option("--format", help="what to print without -o")] = TextFormat.human,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
) -> None:
    """The design with components failed: GPUs lost or degraded, what Slurm drains, the largest job that still
    fits, bisection, all_reduce and training throughput, checkpoint time, power and cooling after a feed or CDU
    loss (docs/whatif.md)."""
    from clusterctl.plan.failure_domains import KINDS, all_components
    from clusterctl.report.whatif import whatif as run
    from clusterctl.report import whatif_output

    if (fail is None) == (not each):
        raise _misuse("give --fail KIND:NAME[,...] or --each KIND", f"KIND is one of {', '.join(KINDS)}")
    for kind in each or []:
        if kind not in KINDS:
            raise _misuse(f"--each {kind}: unknown component kind", f"one of {', '.join(KINDS)}")
    loaded, v = _validated_or_exit(blueprint, suppress, "not analysed")
    names = _failed_names(fail, all_components(v.plan), KINDS) if fail is not None else None
    report = _report_document(loaded, v, {}, pictures=False).to_json()
    d = run(v.plan, report, names, each)
    _show(d, output, fmt, whatif_output)


def _failed_names(fail: str, known: dict, kinds: tuple[str, ...]) -> list[str]:
    """The component names of ``--fail``; a kind or name the plan does not have is misuse (exit 2) naming the
    known ones."""
    import difflib

    names = []
    for item in (x.strip() for x in fail.split(",")):
        kind, sep, name = item.partition(":")
        if not sep or kind not in kinds:
            raise _misuse(f"--fail {item}: expected KIND:NAME, KIND one of {', '.join(kinds)}",
                          "e.g. --fail leaf:ib-leaf01 or --fail feed:r01-pdu1,cdu:cdu01")
        c = known.get(name)
        if c is None or c.kind != kind:
            same = sorted(n for n, k in known.items() if k.kind == kind)
            close = difflib.get_close_matches(name, same, n=3)
            listing = ", ".join(same[:12]) + (f", ... ({len(same):,} in all)" if len(same) > 12 else "")
            raise _misuse(f"--fail {item}: no {kind} named {name!r} in this design",
                          (f"did you mean {', '.join(close)}? " if close else "") +
                          (f"the {_plural(kind)}: {listing}" if same else f"this design has no {kind}"))
        names.append(name)
    return names


def _plural(kind: str) -> str:
    return {"leaf": "leaves", "nvlink-tray": "NVLink switch trays", "feed": "feeds (rack PDUs)",
            "storage": "storage building blocks"}.get(kind, kind + "s")
