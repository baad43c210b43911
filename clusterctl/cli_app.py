"""What every command of the command line shares: the typer app, printing, misuse, and loading a blueprint
for a command that produces something (clusterctl/cli.py and clusterctl/cli_design.py hold the commands)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

from clusterctl.blueprint.load import did_you_mean, load_blueprint
from clusterctl.errors import BlueprintError
from clusterctl.exit_codes import EXIT_FINDINGS, EXIT_UNREADABLE
from clusterctl.hidden_chars import escape_hidden
from clusterctl.output import diagnostics as diag
from clusterctl.rules import Severity, all_rules

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Declarative cluster-as-code for AI-training GPU clusters.")
rules_app = typer.Typer(no_args_is_help=True, help="List and explain validation rules.")
app.add_typer(rules_app, name="rules")


class Format(str, Enum):
    human = "human"
    json = "json"
    sarif = "sarif"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


def _err(text: str) -> None:
    text = escape_hidden(text)  # every printed line: no control, bidi or invisible character reaches the terminal raw
    sys.stderr.write(text if text.endswith("\n") else text + "\n")


def _out(text: str) -> None:
    text = escape_hidden(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _misuse(message: str, hint: str = "") -> typer.Exit:
    _err(f"error: {message}" + (f"\n  hint: {hint}" if hint else ""))
    return typer.Exit(EXIT_UNREADABLE)


def _render_refused(loaded, exc) -> typer.Exit:
    """A target refused a blueprint validate passed (exit 2): where (FILE:LINE:COL when the refusal knows the place),
    why, and its hint. Validate reports every refusal a rule knows of first (tests/test_validate_render_agree.py), so
    one without a hint is a missing rule."""
    where = loaded.source.locate(exc.path).where(loaded.source.file) if exc.path else loaded.source.file
    return _misuse(f"{where}: cannot render: {exc}",
                   exc.hint or "this needs a rule that reports it at validate time: please report it")


def _report_unreadable(exc: BlueprintError, fmt: Format) -> None:
    diags = diag.from_problems(exc.problems, exc.source)
    if fmt is Format.human:
        _err(diag.to_text(diags, f"{exc.source.file}: cannot be read: {len(diags)} problem(s)"))
    elif fmt is Format.json:
        _out(diag.to_json(diags, exc.source.file, "unreadable"))
    else:
        _out(diag.to_sarif(diags, all_rules()))


def _parse_suppress(codes: list[str]) -> dict[str, str]:
    """``--suppress`` values -> {code: "--suppress"}; an unknown code or one of a rule that cannot be
    suppressed is misuse (exit 2)."""
    from clusterctl.rules.suppression import CLI_REASON, cli_refusal

    rules = all_rules()
    known = {r.code for r in rules}
    out = {}
    for code in codes:
        for c in code.split(","):
            c = c.strip().upper()
            if not c:
                continue
            if c not in known:
                raise _misuse(f"--suppress names unknown rule '{c}'",
                              did_you_mean(c, known) or "see `clusterctl rules list`")
            refusal = cli_refusal(c, rules)
            if refusal:
                raise _misuse(refusal, f"fix what {c} reports (clusterctl rules explain {c})")
            out[c] = CLI_REASON
    return out


def _validated_or_exit(blueprint: Path, suppress: list[str] | None, refusal: str):
    """Load and validate for a command that produces files: unreadable -> exit 2, errors -> exit 1."""
    from clusterctl.validate import validate_loaded

    codes = _parse_suppress(suppress or [])
    try:
        loaded = load_blueprint(blueprint)
        v = validate_loaded(loaded, codes)
    except BlueprintError as exc:
        _report_unreadable(exc, Format.human)
        raise typer.Exit(EXIT_UNREADABLE) from None
    if v.result.worst() is not None and v.result.worst() >= Severity.ERROR:
        diags = [d for d in diag.from_findings(v.result.findings, loaded.source) if d.severity >= Severity.ERROR]
        _err(diag.to_text(diags, f"{loaded.source.file}: {refusal}: {len(diags)} error(s); "
                                 f"fix them (only --suppress on the command line suppresses an error)"))
        raise typer.Exit(EXIT_FINDINGS)
    from clusterctl.output.suppressed import notice_lines

    for line in notice_lines(diag.from_findings(v.result.findings, loaded.source)):
        _err(line)
    return loaded, v


def _report_document(loaded, v, overrides: dict, **options):
    """The report of a validated blueprint; a training layout or a command-line value it cannot use is a
    misuse (exit 2) naming what to change."""
    from pydantic import ValidationError

    from clusterctl.perf.job import TrainingConfigError
    from clusterctl.report import document

    try:
        return document.build(v.plan, overrides, **options,
                              findings=diag.from_findings(v.result.findings, loaded.source))
    except TrainingConfigError as exc:
        raise _misuse(f"{loaded.source.file}: cannot estimate training: {exc}",
                      "change workload.training in the blueprint or the command-line option") from None
    except ValidationError as exc:  # range checks of command-line values
        first = exc.errors()[0]
        option = "--" + str(first["loc"][-1]).replace("_", "-") if first["loc"] else "option"
        raise _misuse(f"{option}: {first['msg']} (got {first.get('input')!r})",
                      f"see clusterctl report --help; {len(exc.errors())} problem(s)" if len(exc.errors()) > 1
                      else "see clusterctl report --help") from None
