"""The command line. Thin: commands call library functions and map domain errors to exit codes.

Exit codes: clusterctl/exit_codes.py (docs/cli.md): 0 valid (warnings allowed), 1 findings at or above
``--fail-on``, 2 the blueprint could not be read or the command was misused, 3 an internal error (a bug),
130 interrupted.
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from clusterctl import __version__
from clusterctl.blueprint.load import did_you_mean, load_blueprint
from clusterctl.blueprint.storage import Workload
from clusterctl.blueprint.training import ModelSpec, TrainingSpec
from clusterctl.cli_app import (Format, FailOn, _err, _misuse, _out, _parse_suppress, _render_refused,
                                _report_document, _report_unreadable, _validated_or_exit, app, rules_app)
from clusterctl.cli_numbers import bounded, bounded_like
from clusterctl.errors import BlueprintError
from clusterctl.exit_codes import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREADABLE
from clusterctl.output import diagnostics as diag
from clusterctl.output import finite_json
from clusterctl.rehearse.image.catalog import IMAGES as REHEARSAL_IMAGES
from clusterctl.rules import Severity, all_rules

@app.command()
def validate(
    blueprint: Annotated[Path, typer.Argument(help="blueprint YAML file")],
    format: Annotated[Format, typer.Option("--format", "-f", help="output format")] = Format.human,
    fail_on: Annotated[FailOn, typer.Option(help="lowest severity that makes the exit code 1")] = FailOn.error,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress (repeat or comma-separate)")] = None,
    show_suppressed: Annotated[bool, typer.Option(help="print suppressed findings too (text format)")] = False,
) -> None:
    """Check a blueprint: shape, references, and every physics and plumbing rule, all in one run."""
    from clusterctl.validate import validate_loaded

    codes = _parse_suppress(suppress or [])
    try:
        loaded = load_blueprint(blueprint)
        v = validate_loaded(loaded, codes)
    except BlueprintError as exc:
        _report_unreadable(exc, format)
        raise typer.Exit(EXIT_UNREADABLE) from None
    diags = diag.from_findings(v.result.findings, loaded.source)
    worst = v.result.worst()
    threshold = None if fail_on is FailOn.never else Severity.parse(fail_on.value)
    failed = worst is not None and threshold is not None and worst >= threshold
    summary = (f"{loaded.source.file}: {'FAILED' if failed else 'valid'}: "
               f"{diag.summary_line(diags, v.result.rules_run)}; {v.plan.nodes:,} nodes, {v.plan.gpus:,} GPUs, "
               f"{sum(f.switch_count for f in v.plan.fabrics):,} switches, {len(v.plan.racks):,} racks")
    if format is Format.human:
        _err(diag.to_text(diags, summary, show_suppressed))
    elif format is Format.json:
        _out(diag.to_json(diags, loaded.source.file, "failed" if failed else "valid",
                          {"rules_run": v.result.rules_run,
                           "cluster": {"nodes": v.plan.nodes, "gpus": v.plan.gpus, "racks": len(v.plan.racks),
                                       "switches": sum(f.switch_count for f in v.plan.fabrics)}}))
    else:
        _out(diag.to_sarif(diags, all_rules()))
    raise typer.Exit(EXIT_FINDINGS if failed else EXIT_OK)


@app.command()
def render(
    blueprint: Annotated[Path, typer.Argument(help="blueprint YAML file")],
    output: Annotated[Path, typer.Option("-o", "--output", help="output directory (owned by clusterctl)")],
    target: Annotated[Optional[list[str]], typer.Option("--target", "-t",
                                                        help="target(s) to render (repeat): slurm, nccl, ansible, testinfra, kubernetes, ...")] = None,
    check: Annotated[bool, typer.Option(help="report drift against DIR and exit 1 if any; write nothing")] = False,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
    switches: Annotated[Optional[str], typer.Option(
        help="host list of routed switches (or 'all') whose startup directories to write, for blueprints over "
             "1,024 routed switches, which render one table per tier instead (docs/roce.md); implies --target switches")] = None,
    handoff_all: Annotated[bool, typer.Option(
        help="write Warewulf's nodes.conf and every fabric's cabling sheet (handoff/) whatever the blueprint's size: "
             "over 4,096 nodes or 20,000 cables they are written only when asked (docs/handoff.md); implies "
             "--target handoff")] = False,
) -> None:
    """Render the deployable files. A blueprint with error findings is refused and nothing is written."""
    from clusterctl.targets import TARGETS, RenderError, render_targets
    from clusterctl.write import RENDER_SEALED, OutputDirError, compare, write_tree

    names = []
    for t in target or []:
        for name in t.split(","):
            name = name.strip()
            if name not in TARGETS:
                raise _misuse(f"unknown target '{name}'", did_you_mean(name, TARGETS) or f"one of {', '.join(TARGETS)}")
            names.append(name)
    loaded, v = _validated_or_exit(blueprint, suppress, "not rendered")
    only = _switches_asked(v.plan, switches) if switches is not None else None
    if only is not None and "switches" not in names:
        names.append("switches")
    if handoff_all and "handoff" not in names:
        names.append("handoff")
    try:
        files = render_targets(v.plan, names or None, only, handoff_all)
    except RenderError as exc:
        raise _render_refused(loaded, exc) from None
    from clusterctl.targets.cloud_node import EXECUTABLE as CLOUD_PROGRAMS

    executable = {p for p in files if p.endswith(".sh") or p in CLOUD_PROGRAMS}
    try:
        if check:
            result = compare(files, output, executable=executable, sealed=RENDER_SEALED)
        else:
            result = write_tree(files, output, executable=executable, sealed=RENDER_SEALED)
    except OutputDirError as exc:
        raise _misuse(str(exc), exc.hint) from None
    if check:
        for line in result.drift_lines(output):
            _err(line)
        _err(f"{output}: {'drift in ' + str(result.drift_count) + ' file(s)' if result.drift else 'up to date'} ({len(files)} files)")
        raise typer.Exit(EXIT_FINDINGS if result.drift else EXIT_OK)
    for w in result.warnings + [f"{output / p}: not rendered, in a directory clusterctl renders (left in place)"
                                for p in result.extra]:
        _err(f"warning: {w}")
    if result.recovered:
        _err(f"{output}: completed an interrupted render first ({result.recovered})")
    _err(f"{output}: {len(files)} files ({len(result.added)} added, {len(result.changed)} changed, "
         f"{len(result.removed)} removed, {len(result.unchanged)} unchanged"
         + (f", {len(result.modes)} mode(s) fixed)" if result.modes else ")"))


def _switches_asked(plan, switches: str) -> frozenset[str]:
    """The routed switches ``render --switches`` names (a host list, or ``all``); a name that is not one is misuse."""
    from clusterctl.hostlist import HostlistError, count, expand
    from clusterctl.targets.switches import routed_switches

    known = routed_switches(plan)
    if switches.strip() == "all":
        return known
    try:
        if count(switches) > max(len(known), 1):
            raise HostlistError(f"'{switches}' names more switches than the blueprint's {len(known):,} routed ones")
        asked = expand(switches)
    except HostlistError as exc:
        raise _misuse(f"--switches: {exc}", "a host list such as roce-leaf[0001-0004], or all") from None
    unknown = [n for n in asked if n not in known]
    if unknown:
        raise _misuse(f"--switches: {unknown[0]} is not a switch of a routed fabric of this blueprint"
                      + (f" ({len(unknown)} names are not)" if len(unknown) > 1 else ""),
                      did_you_mean(unknown[0], sorted(known)) or (
                          "names as in the rendered switches/<fabric>/<tier>.tsv tables" if known
                          else "this blueprint has no routed fabric with a loopback pool"))
    return frozenset(asked)


class ReportFormat(str, Enum):
    markdown = "markdown"
    json = "json"


@app.command()
def report(
    blueprint: Annotated[Optional[Path], typer.Argument(help="blueprint YAML file (not needed with --list-models)",
                                                        show_default=False)] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output",
                                                   help="write report.md, report.json and pictures/ here")] = None,
    fmt: Annotated[ReportFormat, typer.Option("--format", help="what to print when no -o is given")] = ReportFormat.markdown,
    png: Annotated[bool, typer.Option("--png", help="also write PNG copies of the pictures (needs cairosvg)")] = False,
    model: Annotated[Optional[str], typer.Option(help="model preset (see --list-models)")] = None,
    list_models: Annotated[bool, typer.Option("--list-models", help="list model presets and exit")] = False,
    params_b: Annotated[Optional[float], typer.Option(help="parameters in billions (simple form)",
                                                      callback=bounded_like(Workload, "params_b"))] = None,
    layers: Annotated[Optional[int], typer.Option(help="model: layers", callback=bounded_like(ModelSpec, "layers"))] = None,
    hidden: Annotated[Optional[int], typer.Option(help="model: hidden size", callback=bounded_like(ModelSpec, "hidden"))] = None,
    heads: Annotated[Optional[int], typer.Option(help="model: attention heads", callback=bounded_like(ModelSpec, "heads"))] = None,
    kv_heads: Annotated[Optional[int], typer.Option(help="model: KV heads (GQA)", callback=bounded_like(ModelSpec, "kv_heads"))] = None,
    ffn_hidden: Annotated[Optional[int], typer.Option(help="model: MLP width", callback=bounded_like(ModelSpec, "ffn_hidden"))] = None,
    vocab: Annotated[Optional[int], typer.Option(help="model: vocabulary", callback=bounded_like(ModelSpec, "vocab"))] = None,
    seq_len: Annotated[Optional[int], typer.Option(help="model: sequence length", callback=bounded_like(ModelSpec, "seq_len"))] = None,
    global_batch: Annotated[Optional[int], typer.Option(help="sequences per step", callback=bounded_like(TrainingSpec, "global_batch"))] = None,
    tp: Annotated[Optional[int], typer.Option(help="tensor parallel size", callback=bounded_like(TrainingSpec, "tp"))] = None,
    pp: Annotated[Optional[int], typer.Option(help="pipeline parallel size", callback=bounded_like(TrainingSpec, "pp"))] = None,
    dp: Annotated[Optional[int], typer.Option(help="data parallel size", callback=bounded_like(TrainingSpec, "dp"))] = None,
    cp: Annotated[Optional[int], typer.Option(help="context parallel size", callback=bounded_like(TrainingSpec, "cp"))] = None,
    ep: Annotated[Optional[int], typer.Option(help="expert parallel size", callback=bounded_like(TrainingSpec, "ep"))] = None,
    micro_batch: Annotated[Optional[int], typer.Option(help="micro batch size", callback=bounded_like(TrainingSpec, "micro_batch"))] = None,
    virtual_stages: Annotated[Optional[int], typer.Option(help="interleaved pipeline chunks per stage",
                                                          callback=bounded_like(TrainingSpec, "virtual_stages"))] = None,
    recompute: Annotated[Optional[str], typer.Option(help="none | selective | full")] = None,
    precision: Annotated[Optional[str], typer.Option(help="bf16 | fp8 (linear layers' GEMMs)")] = None,
    mfu: Annotated[Optional[float], typer.Option(help="MFU for the simple throughput form, e.g. 0.4",
                                                 callback=bounded_like(TrainingSpec, "mfu"))] = None,
    gpus: Annotated[Optional[int], typer.Option(help="GPUs the training job uses (default: the whole GPU group)",
                                                callback=bounded_like(TrainingSpec, "gpus"))] = None,
    restart_min: Annotated[Optional[float], typer.Option(help="minutes from an interruption to training again",
                                                         callback=bounded_like(TrainingSpec, "restart_min"))] = None,
    checkpoint_interval_min: Annotated[Optional[float], typer.Option(help="minutes between checkpoints",
                                                                     callback=bounded_like(Workload, "checkpoint_every_min"))] = None,
    pue: Annotated[Optional[float], typer.Option(help="facility PUE (default: site.pue)",
                                                 callback=bounded(1, 5, low_open=True))] = None,
    ranks: Annotated[Optional[int], typer.Option(help="GPUs in the collective group to tabulate",
                                                 callback=bounded(2, 100_000_000))] = None,
    racks: Annotated[bool, typer.Option("--racks", help="add how all_reduce bus bandwidth falls as a job spans "
                                                       "1, 2, 4, ... NVLink domains (racks on NVL72)")] = False,
    whatif: Annotated[bool, typer.Option("--whatif", help="add the blast radius: every component failed alone, the "
                                                          "worst of each kind, single points of failure")] = False,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
) -> None:
    """The cluster's key figures: capacity, collectives, training estimate, storage, reliability, power, BOM."""
    from clusterctl.perf.model_presets import presets

    if list_models:
        _out(_models_listing(presets()))
        raise typer.Exit(EXIT_OK)
    if blueprint is None:
        raise _misuse("missing argument BLUEPRINT", "clusterctl report BLUEPRINT, or clusterctl report --list-models")
    loaded, v = _validated_or_exit(blueprint, suppress, "not reported")
    overrides = dict(model=model, params_b=params_b, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads,
                     ffn_hidden=ffn_hidden, vocab=vocab, seq_len=seq_len, global_batch=global_batch, tp=tp, pp=pp,
                     dp=dp, cp=cp, ep=ep, micro_batch=micro_batch, virtual_stages=virtual_stages,
                     recompute=recompute, precision=precision, mfu=mfu, gpus=gpus, restart_min=restart_min)
    rep = _report_document(loaded, v, overrides, checkpoint_interval_min=checkpoint_interval_min, pue=pue,
                           ranks=ranks, racks=racks, whatif=whatif)
    _print_or_write_report(rep, output, fmt, png)


def _print_or_write_report(rep, output: Path | None, fmt: ReportFormat, png: bool) -> None:
    """Markdown or JSON on stdout, or report.md, report.json and pictures/ (PNG copies too) under ``output``."""
    from clusterctl.report import document
    from clusterctl.write import OutputDirError

    if output is None:
        if png:
            raise _misuse("--png needs -o DIR")
        if fmt is ReportFormat.json:
            _out(finite_json.dumps(rep.to_json(), indent=2))
        else:
            _out(rep.to_markdown())
        return
    try:
        files = document.write(rep, output, png=png)
    except OutputDirError as exc:
        raise _misuse(str(exc), exc.hint) from None
    except RuntimeError as exc:
        raise _misuse(str(exc)) from None
    _err(f"{output}: {len(files)} files (report.md, report.json, {len(files) - 2} pictures)")


def _models_listing(presets: dict, width: int = 100) -> str:
    """One block per model preset: its name and shape, then its whole source wrapped at word boundaries."""
    import textwrap

    blocks = []
    for name, entry in sorted(presets.items()):
        head = (f"{name:16} {entry['layers']} layers, hidden {entry['hidden']:,}, {entry['heads']} heads, "
                + (f"{entry['experts']} experts, top {entry.get('topk', 1)}, " if entry.get("experts") else "")
                + f"vocab {entry['vocab']:,}, seq {entry['seq_len']:,}")
        source = textwrap.fill(entry["source"], width, initial_indent=" " * 17 + "source: ",
                               subsequent_indent=" " * 25, break_long_words=False, break_on_hyphens=False)
        blocks.append(head + "\n" + source)
    return "\n".join(blocks)


@rules_app.command("list")
def rules_list(
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.human,
    area: Annotated[Optional[str], typer.Option(help="only rules of this area")] = None,
    markdown: Annotated[bool, typer.Option(help="the rule reference as Markdown (docs/rules.md)")] = False,
) -> None:
    """Every rule: id, default severity, area and title."""
    rules = [r for r in all_rules() if area is None or r.area == area]
    if area is not None and not rules:
        raise _misuse(f"no rules in area '{area}'", did_you_mean(area, {r.area for r in all_rules()}))
    if markdown:
        from clusterctl.output.rule_docs import rules_markdown

        _out(rules_markdown(rules))
    elif format is Format.human:
        for r in rules:
            _out(f"{r.code:<10} {str(r.severity):<8} {r.area:<11} {r.title}")
    else:
        _out(json.dumps([{"code": r.code, "severity": str(r.severity), "area": r.area, "title": r.title,
                          "doc": r.doc} for r in rules], indent=2))


@rules_app.command("explain")
def rules_explain(code: Annotated[str, typer.Argument(help="rule id, e.g. POWER001")]) -> None:
    """What a rule checks and why."""
    rules = {r.code: r for r in all_rules()}
    r = rules.get(code.upper())
    if r is None:
        raise _misuse(f"unknown rule '{code}'", did_you_mean(code.upper(), rules) or "see `clusterctl rules list`")
    if not r.suppressible:
        how = "It cannot be suppressed, neither in the blueprint nor with --suppress."
    else:
        how = (f"Suppress its warnings and infos in the blueprint with:\n  validation:\n"
               f"    suppress: [{{rule: {r.code}, reason: \"...\"}}]\n"
               f"Its errors only on the command line, for one run: --suppress {r.code}")
    _out(f"{r.code} ({r.severity}, {r.area}): {r.title}\n\n{r.doc}\n\n{how}")


@app.command()
def schema(
    markdown: Annotated[bool, typer.Option(help="the blueprint reference as Markdown (docs/blueprint.md)")] = False,
) -> None:
    """Print the blueprint JSON Schema (for editors: yaml-language-server $schema)."""
    if markdown:
        from clusterctl.output.schema_docs import blueprint_markdown

        _out(blueprint_markdown())
        return
    from clusterctl.blueprint.schema import blueprint_schema

    _out(json.dumps(blueprint_schema(), indent=2, sort_keys=True))


@app.command()
def catalog(
    section: Annotated[Optional[str], typer.Argument(help="accelerators, nics, switches, servers, rack_systems or instances")] = None,
    format: Annotated[Format, typer.Option("--format", "-f")] = Format.human,
    blueprint: Annotated[Optional[Path], typer.Option(help="include this blueprint's own catalog entries")] = None,
) -> None:
    """List the hardware catalog."""
    from clusterctl.catalog import SECTIONS, load_shipped_catalog
    from clusterctl.catalog.listing import catalog_table

    cat = load_shipped_catalog()
    if blueprint is not None:
        try:
            cat = cat.with_entries(load_blueprint(blueprint).blueprint.catalog)
        except BlueprintError as exc:
            _report_unreadable(exc, Format.human)
            raise typer.Exit(EXIT_UNREADABLE) from None
    sections = SECTIONS
    if section is not None:
        if section not in SECTIONS:
            raise _misuse(f"unknown catalog section '{section}'",
                          did_you_mean(section, SECTIONS) or f"one of {', '.join(SECTIONS)}")
        sections = (section,)
    if format is Format.human:
        _out(catalog_table(cat, sections))
    else:
        _out(finite_json.dumps({s: {n: e.model_dump(mode="json") for n, e in sorted(cat.section(s).items())}
                                for s in sections}, indent=2))


@app.command()
def init(
    preset: Annotated[Optional[str], typer.Argument(help="a shipped blueprint name, e.g. lab-2node (see --list)")] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="file to write")] = Path("blueprint.yaml"),
    force: Annotated[bool, typer.Option(help="overwrite an existing file")] = False,
    list_presets: Annotated[bool, typer.Option("--list", help="list the presets and exit")] = False,
    gpus: Annotated[Optional[int], typer.Option(help="start from a GPU count instead of a preset, e.g. 2048")] = None,
    gpu: Annotated[str, typer.Option(help="with --gpus: the GPU, one of h100, h200, b200, gb200")] = "h100",
    fabric: Annotated[str, typer.Option(help="with --gpus: the compute fabric, roce or infiniband")] = "roce",
) -> None:
    """Start a blueprint from a shipped example (a preset), or size one from --gpus/--gpu/--fabric."""
    from clusterctl.resources import shipped_blueprints

    presets = shipped_blueprints()
    if list_presets or (preset is None and gpus is None):
        _out(_presets_listing(presets))
        if not list_presets:
            _err("start from one: clusterctl init PRESET -o FILE, or size your own: "
                 "clusterctl init --gpus 2048 --gpu b200 --fabric roce -o FILE")
        return
    if preset is not None and gpus is not None:
        raise _misuse("give a preset or --gpus, not both", f"clusterctl init {preset} -o FILE, or "
                      f"clusterctl init --gpus {gpus} --gpu {gpu} --fabric {fabric} -o FILE")
    if preset is not None and preset not in presets:
        raise _misuse(f"unknown preset '{preset}'", did_you_mean(preset, presets) or
                      f"one of {', '.join(sorted(presets))} (clusterctl init --list)")
    from clusterctl.starter import StarterError, preset_inventories, starter_blueprint, write_blueprint_file

    try:  # a missing directory, a link (dangling or not) or an existing file: exit 2, nothing created
        if preset is not None:
            inventories = preset_inventories(presets[preset])
            existing = [p for p in (output.parent / n for n in inventories) if os.path.lexists(p)]
            if existing and not force:  # the blueprint is not written when its inventory cannot be
                raise StarterError(f"{existing[0]} exists", "pass --force to overwrite")
            write_blueprint_file(output, presets[preset].read_bytes(), force=force)
            for name in inventories:  # site.inventory: the files beside the blueprint
                write_blueprint_file(output.parent / name, (presets[preset].parent / name).read_bytes(), force=force)
                _err(f"wrote {output.parent / name}, the preset's example inventory: put your hosts' serials and "
                     "MACs in it (docs/inventory.md)")
            _err(f"wrote {output} from preset {preset}; next: clusterctl validate {output}")
            return
        write_blueprint_file(output, starter_blueprint(gpus, gpu, fabric).encode(), force=force)
    except StarterError as exc:
        raise _misuse(str(exc), exc.hint) from None
    _err(f"wrote {output}: {gpus:,} {gpu} GPUs on {fabric}; next: clusterctl validate {output}")


def _presets_listing(presets: dict[str, Path]) -> str:
    """One line per shipped blueprint: its name and its ``description``."""
    import yaml

    rows = []
    for name, path in sorted(presets.items()):
        data = yaml.safe_load(path.read_text()) or {}
        rows.append((name, str(data.get("description", "")) if isinstance(data, dict) else ""))
    width = max(len(n) for n, _ in rows)
    return "presets (clusterctl init PRESET -o FILE):\n" + "\n".join(
        f"  {n.ljust(width)}  {d}" for n, d in rows)


class _InventoryGroup(TyperGroup):
    """``clusterctl inventory``: ``template`` and ``cloud``; a first argument that names no subcommand is the cloud
    form's blueprint, so ``clusterctl inventory BLUEPRINT --from-pulumi ...`` (its spelling before issue 28)
    still works."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["cloud", *args]
        return super().parse_args(ctx, args)


inventory_app = typer.Typer(cls=_InventoryGroup, no_args_is_help=True,
                            help="The site's per-host inventory CSV (template), or a deployed cloud cluster's "
                                 "Ansible inventory (cloud; `clusterctl inventory BLUEPRINT --from-pulumi ...`).")
app.add_typer(inventory_app, name="inventory")


@inventory_app.command("template")
def inventory_template(
    blueprint: Annotated[Path, typer.Argument(help="blueprint YAML file")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="CSV file to write (default: stdout)")] = None,
    group: Annotated[Optional[list[str]], typer.Option(help="only this node group's hosts (repeat); for a site "
                                                             "whose inventory is split over several files")] = None,
    force: Annotated[bool, typer.Option(help="overwrite an existing file that is not one of the blueprint's "
                                             "inventory files")] = False,
) -> None:
    """Write the per-host inventory CSV a site fills in (docs/inventory.md): one row per planned on-prem host,
    the values of the blueprint's inventory files kept."""
    from clusterctl.plan import expand
    from clusterctl.starter import StarterError, write_blueprint_file
    from clusterctl.targets.inventory_template import TemplateTooLarge, template_devices, template_hosts
    from clusterctl.targets.inventory_template import inventory_template as template_text

    try:
        loaded = load_blueprint(blueprint)
        plan = expand(loaded)
    except BlueprintError as exc:
        _report_unreadable(exc, Format.human)
        raise typer.Exit(EXIT_UNREADABLE) from None
    unknown = [g for g in group or [] if plan.group(g) is None]
    if unknown:
        raise _misuse(f"--group {unknown[0]}: no such node group", did_you_mean(unknown[0], [g.name for g in plan.groups])
                      or f"one of {', '.join(g.name for g in plan.groups)}")
    try:
        text = template_text(plan, group or ())
    except TemplateTooLarge as exc:
        raise _misuse(str(exc), "write one file per node group (--group NAME -o FILE) and list them all in "
                                "site.inventory") from None
    if output is None:
        sys.stdout.write(text)
        return
    own = {Path(inv.source.file).resolve() for inv in loaded.inventory}
    try:  # one of the blueprint's own inventory files is rewritten in place: its values are in the template
        write_blueprint_file(output, text.encode(), force=force or output.resolve() in own)
    except StarterError as exc:
        raise _misuse(str(exc), exc.hint) from None
    _err(f"wrote {output}: {len(template_hosts(plan, group or ())):,} hosts, "
         f"{len(template_devices(plan, group or ())):,} management devices; fill it in, name it in site.inventory and run "
         f"clusterctl validate {blueprint}")


@inventory_app.command("cloud")
def inventory(
    blueprint: Annotated[Path, typer.Argument(help="blueprint YAML file")],
    from_pulumi: Annotated[Path, typer.Option("--from-pulumi", help="`pulumi stack output --json --show-secrets` of the rendered project")],
    output: Annotated[Path, typer.Option("-o", "--output", help="the directory `clusterctl render` wrote (or a new one)")],
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
) -> None:
    """Ansible inventory of a deployed cloud cluster: the render's groups plus each host's private address
    from the Pulumi stack outputs (updates ansible/inventory.yml and hosts/hosts in DIR)."""
    from clusterctl.cloud.stack.inventory import OutputsError, cloud_nodes, read_outputs
    from clusterctl.targets import RenderError
    from clusterctl.targets.cloud_inventory import write_inventory
    from clusterctl.write import OutputDirError

    loaded, v = _validated_or_exit(blueprint, suppress, "no inventory")
    try:
        nodes = cloud_nodes(v.plan, read_outputs(from_pulumi), from_pulumi)
        result = write_inventory(v.plan, nodes, output, str(blueprint))
    except OutputsError as exc:
        raise _misuse(str(exc), exc.hint) from None
    except OutputDirError as exc:
        raise _misuse(str(exc), exc.hint) from None
    except RenderError as exc:
        raise _render_refused(loaded, exc) from None
    _err(f"{output / 'ansible' / 'inventory.yml'}: {result.hosts} cloud hosts with ansible_host from {from_pulumi} "
         f"({result.mode}; {len(result.changed)} file(s) changed); next: cd {output / 'ansible'} && "
         f"ansible-playbook site.yml")

class RehearseFormat(str, Enum):
    human = "human"
    json = "json"


RehearseImage = Enum("RehearseImage", {name: name for name in REHEARSAL_IMAGES}, type=str)
"""``clusterctl rehearse --image``: the names of the rehearsal's node images"""


class RehearseScenario(str, Enum):
    """What runs on the booted nodes (docs/rehearse.md)."""

    all = "all"
    nodes = "nodes"
    deploy = "deploy"
    install = "install"
    version_guard = "version-guard"
    node_failure = "node-failure"
    monitoring = "monitoring"
    failover = "failover"
    db_failover = "db-failover"
    day0 = "day0"
    add_node = "add-node"
    pull = "pull"
    elastic = "elastic"
    fabric = "fabric"
    scratch = "scratch"
    users = "users"


@app.command()
def rehearse(
    blueprint: Annotated[Optional[Path], typer.Argument(help="blueprint YAML file")] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="render and rehearsal state directory")] = Path("rehearsal"),
    nodes_per_group: Annotated[int, typer.Option("--nodes-per-group", min=1, max=16,
                                                 help="hosts of each compute group to boot")] = 2,
    keep: Annotated[bool, typer.Option(help="leave the nodes running (stop them with --down DIR)")] = False,
    down: Annotated[Optional[Path], typer.Option("--down", metavar="DIR",
                                                 help="stop and remove the rehearsal recorded in DIR, then exit")] = None,
    fmt: Annotated[RehearseFormat, typer.Option("--format", help="human progress, or a JSON summary on stdout")] = RehearseFormat.human,
    scenario: Annotated[Optional[list[RehearseScenario]], typer.Option(
        "--scenario", help="all (every scenario that applies, on one boot); nodes: boot and SSH only; deploy: "
                         "converge site.yml twice, testinfra, srun; install (alone): deploy without the second converge; version-guard, scratch, node-failure, monitoring, failover, users, db-failover, day0, pull, "
                         "elastic, add-node: docs/rehearse.md. Repeat it to run several scenarios on one boot. fabric (alone, not in all): "
                         "a slice of each routed Ethernet/RoCE fabric with FRR from the rendered switch files")] = None,
    suppress: Annotated[Optional[list[str]], typer.Option(help="rule id(s) to suppress")] = None,
    image: Annotated[Optional[RehearseImage], typer.Option(
        "--image", help="the clean OS image the nodes boot from (default: the one nearest the blueprint's "
                        "software.os; docs/rehearse.md, Images)")] = None,
) -> None:
    """Render the blueprint, boot its hosts as isolated nodes on this machine (root; docs/rehearse.md) and
    prove the rendered cluster works there. Exit 0 every step passed, 1 a step failed, 2 cannot rehearse."""
    from clusterctl.rehearse import RehearsalError
    from clusterctl.rehearse.node import lifecycle, probe
    from clusterctl.rehearse.run import rehearse as run_rehearsal
    from clusterctl.rehearse.suite import build
    from clusterctl.rehearse.ui import RichProgress
    from clusterctl.targets import RenderError, render_targets
    from clusterctl.write import OutputDirError

    try:
        if down is not None:
            if blueprint is not None:
                raise _misuse("--down takes the rehearsal directory only, not a blueprint")
            state = lifecycle.down(down)
            _err(f"{down}: rehearsal {state.id} is down ({len(state.nodes)} node(s), bridge {state.bridge})")
            raise typer.Exit(EXIT_OK)
        if blueprint is None:
            raise _misuse("missing BLUEPRINT", "clusterctl rehearse BLUEPRINT [-o DIR], or --down DIR")
        scenarios = [s.value for s in scenario or [RehearseScenario.all]]
        probe.require(converge=scenarios != [RehearseScenario.nodes.value])  # before anything is rendered or booted
        loaded, v = _validated_or_exit(blueprint, suppress, "not rehearsed")
        try:
            plan = build(scenarios, blueprint, v.plan, output, nodes_per_group, render_targets,
                         image.value if image is not None else None)
        except RenderError as exc:
            raise _render_refused(loaded, exc) from None
        except OutputDirError as exc:
            raise _misuse(str(exc), exc.hint) from None
        progress = RichProgress()
        progress.note(f"{output}: rendered {len(plan.files)} files as rehearsed ({plan.describe}); "
                      f"booting {len(plan.specs)} node(s) from {plan.image.name} ({plan.info['image']['reason']})")
        summary = run_rehearsal(output, plan.specs, plan.steps, progress, keep=keep, info=plan.info,
                                image=plan.image, links=plan.links)
    except RehearsalError as exc:
        raise _misuse(str(exc), exc.hint) from None
    if fmt is RehearseFormat.json:
        _out(finite_json.dumps(summary.to_json(), indent=2))
    if summary.kept:
        progress.note(f"nodes kept: ssh -F {summary.state.ssh_config} <node>; "
                      f"stop them with clusterctl rehearse --down {output}")
    progress.note(f"rehearsal {'passed' if summary.ok else 'FAILED'}"
                  + (f"; teardown {summary.teardown_seconds:.2f} s" if summary.teardown_seconds is not None else ""))
    raise typer.Exit(EXIT_OK if summary.ok else EXIT_FINDINGS)


def version_callback(value: bool) -> None:
    if value:
        _out(f"clusterctl {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True)] = False,
          max_input_size: Annotated[Optional[str], typer.Option(
              "--max-input-size", envvar="CLUSTERCTL_MAX_INPUT_SIZE", metavar="SIZE",
              help="largest blueprint file accepted, e.g. 16MiB (default 4MiB); also raises the YAML value "
                   "count limit")] = None):
    """clusterctl: validate, render and report AI-training GPU clusters from one blueprint."""
    from clusterctl import limits

    try:
        limits.configure(None if max_input_size is None else limits.parse_size(max_input_size))
    except ValueError as exc:
        raise _misuse(f"--max-input-size: {exc}") from None


def main() -> None:
    try:
        app()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # never a traceback: say it is our bug, with the exception
        _err(f"internal error: {type(exc).__name__}: {exc}\n"
             "  this is a bug in clusterctl; please report it with the blueprint (CLUSTERCTL_DEBUG=1 shows the trace)")
        import os
        if os.environ.get("CLUSTERCTL_DEBUG"):
            raise
        sys.exit(EXIT_INTERNAL)


from clusterctl import cli_design  # noqa: E402,F401  (registers compare and whatif on app)
