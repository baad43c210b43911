"""The meaning sweep of issue 24: every string field of the schema x every payload class, run in-process as the
command line runs it (``load_blueprint`` of a file -> ``validate_loaded`` -> ``render_targets``).

Each case ends one way:

- **refused**: the blueprint cannot be read (``BlueprintError``, exit 2), validate has an active error finding
  (``render`` exits 1 and writes nothing), or a target refuses it (``RenderError``, exit 2); the codes are kept;
- **rendered**: then :func:`tests.security.positions.violations` must find nothing the unmodified blueprint's
  render does not have in a privilege-bearing position ("rendered-safe"), else it is a **violation**;
- **exit 3**: any other exception from the code under test.

The fields are located by ``tests/test_injection.py``'s walk of the JSON Schema, in these bases (the first that
has a field is used): the lab blueprint with every optional setting (``lab``), ``aws-p5``, ``lab-ha``, then the
other bases of test_injection for the few fields only they use. Payloads replace the value (``whole``); in a
``host:/path`` value the name classes also replace the host and the path class the path; syntax payloads are
appended and reader-hiding characters put in the middle, as test_injection does. Two more sets of cases are not
one field's: name-like payloads as the new name of a lab entity, renamed everywhere it is referred to
(:func:`rename_cases`: a host named ``2130706433`` must be the controller and the NFS server too), case
collisions between an added entity and an existing one (``HEAD01`` beside ``head01``), and reader-hiding
characters written raw into the YAML text, in comments and in values (:func:`text_cases`).
"""

from __future__ import annotations

import atexit
import copy
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from clusterctl.blueprint.load import load_blueprint
from clusterctl.catalog import load_shipped_catalog
from clusterctl.errors import BlueprintError
from clusterctl.rules.base import Severity
from clusterctl.targets import RenderError, render_targets
from clusterctl.validate import validate_loaded
from tests.helpers import BLUEPRINTS, shipped
from tests.security import payloads as P
from tests.security.positions import Positions, expand_hosts, read_positions, violations
from tests.test_injection import (BASES, FREE_TEXT, INVENTORIES, Site, _locate_model, base as injection_base, lab_extended,
                                  schema, string_fields, to_yaml, with_catalog_copies, with_value)

ORDER = ("lab", "aws-p5", "lab-ha") + tuple(b for b in BASES if b not in ("lab-extended", "aws-p5"))
"""where a field is looked for, in this order"""


@cache
def base_data(name: str) -> dict:
    """A base blueprint as data. ``lab`` is test_injection's lab with every optional setting, with a lustre
    tier fast enough for its checkpoint (so the unmodified blueprint has no error finding) and an explicit
    ``state_save_location`` (so the single-controller case reaches that field)."""
    if name == "lab":
        data = lab_extended()
        data["storage"][3]["write_gb_per_s"] = 20
        data["slurm"]["state_save_location"] = "/var/spool/slurmctld"
        return data
    if name == "lab-ha":
        return with_catalog_copies(shipped("lab-ha"))
    return injection_base(name)


@cache
def sites() -> dict[str, Site]:
    """Field id -> its first place in ORDER."""
    found: dict[str, list[Site]] = {}
    for name in ORDER:
        _locate_model("Blueprint", schema(), base_data(name), (), name, found)
    return {f: found[f][0] for f in string_fields() if f in found}


# --- running one blueprint --------------------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str  # refused | rendered | exit3
    detail: str = ""  # refusal codes, or the exception
    files: dict[str, str] | None = None


_CATALOG = load_shipped_catalog()
_TMP = Path(tempfile.mkdtemp(prefix="clusterctl-sweep-"))
atexit.register(shutil.rmtree, _TMP, True)
for _beside in [*BLUEPRINTS.glob("*.csv"), *INVENTORIES.glob("*.csv"), *INVENTORIES.glob("*.yaml")]:
    shutil.copy(_beside, _TMP)  # the bases' site.inventory files and price sheet


def run_text(text: str, render: bool = True) -> Outcome:
    """The blueprint ``text`` as `clusterctl render` treats it: read from a file, validated (no --suppress),
    rendered with every target (``render=False``: stop after validate, an accepted blueprint is "rendered"
    without files)."""
    path = _TMP / "bp.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        loaded = load_blueprint(path)
        v = validate_loaded(loaded, {}, _CATALOG)
    except BlueprintError as exc:
        return Outcome("refused", ",".join(sorted({str(p.code) for p in exc.problems})))
    except Exception as exc:  # noqa: BLE001 - anything else is exit 3
        return Outcome("exit3", f"{type(exc).__name__} at load/validate: {str(exc)[:200]}")
    errors = sorted({f.code for f in v.result.active() if f.severity >= Severity.ERROR})
    if errors:
        return Outcome("refused", ",".join(errors))
    if not render:
        return Outcome("rendered")
    try:
        return Outcome("rendered", files=render_targets(v.plan))
    except RenderError:
        return Outcome("refused", "render")
    except Exception as exc:  # noqa: BLE001
        return Outcome("exit3", f"{type(exc).__name__} at render: {str(exc)[:200]}")


@dataclass(frozen=True)
class Baseline:
    positions: Positions
    compute_address: str
    namespaces: dict[str, tuple[str, ...]]


@cache
def baseline(name: str) -> Baseline:
    out = run_text(to_yaml(base_data(name)))
    assert out.kind == "rendered", f"base {name}: {out.kind} {out.detail}"
    pos = read_positions(out.files)
    return Baseline(pos, _first_compute_address(out.files), _namespaces(base_data(name), pos))


def _first_compute_address(files: dict[str, str]) -> str:
    """The in-band address of the first compute host: the inventory's ``compute`` group, /etc/hosts' address
    (a cloud blueprint's hosts resolve through the provider's DNS: then the lab's)."""
    inv = yaml.safe_load(files["ansible/inventory.yml"])["all"]["children"]
    group = next(iter(inv["compute"].get("children") or {}), None)
    hosts = (inv[group] if group else inv["compute"]).get("hosts") or {}
    first = expand_hosts(str(next(iter(hosts))))[0]
    for line in files["hosts/hosts"].splitlines():
        cols = line.split("#")[0].split()
        if first in cols[1:]:
            return cols[0]
    return baseline("lab").compute_address


def _namespaces(data: dict, pos: Positions) -> dict[str, tuple[str, ...]]:
    slurm = data.get("slurm", {})
    return {
        "host": tuple(sorted(pos.names.get("host", set()))),
        "group": tuple(g["name"] for g in data.get("node_groups", [])),
        "node_type": tuple(data.get("node_types", {})),
        "partition": tuple(p["name"] for p in slurm.get("partitions", [])),
        "qos": tuple(q["name"] for q in slurm.get("qos", [])),
        "rack": tuple(n for r in data.get("racks", []) for n in expand_hosts(r["names"])),
        "storage": tuple(s["name"] for s in data.get("storage", [])),
        "fabric": tuple(f["name"] for f in data.get("fabrics", [])),
        "pool": tuple(data.get("addressing", {})),
        "rack_profile": tuple(data.get("rack_profiles", {})),
    }


# --- the cases --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    cls: str
    field: str  # schema field id, or what the text/entity case changes
    base: str
    placement: str
    payload: str
    text: Callable[[], str] = field(compare=False, repr=False)
    new: str = ""  # the value the field gets
    site: Site | None = None

    def label(self) -> str:
        return f"{self.field} = {self.payload!r} ({self.placement}, {self.base})"


_HOST_PART = re.compile(r"^(?P<host>[A-Za-z0-9._-]+)(?P<mid>(@[A-Za-z0-9]+)?:)(?P<path>/(?!/).*)$")


def collision_name(b: Baseline, original: str) -> str:
    """Another entity's name from ``original``'s namespace, in another case; else the first host's."""
    for names in b.namespaces.values():
        if original in names:
            other = [n for n in names if n != original and n.upper() != n]
            if other:
                return other[0].upper()
    return next(n for n in b.namespaces["host"] if n.upper() != n).upper()


def _payloads(cls: str, b: Baseline, original: str) -> tuple[str, ...]:
    if cls == P.CASE_COLLISION:
        return (collision_name(b, original),)
    if cls == P.PLANNED_ADDRESS:
        return (b.compute_address,)
    return P.FIXED[cls]


def _placements(cls: str, original: str, payload: str, key: bool) -> Iterator[tuple[str, str]]:
    if cls == "syntax":
        yield "suffix", original + payload
        return
    if cls == "reader-hiding":
        yield "middle", original[:len(original) // 2] + payload + original[len(original) // 2:]
        return
    yield "whole", payload
    m = None if key else _HOST_PART.match(original)
    if m and cls in P.NAME_LIKE:
        yield "host", payload + m["mid"] + m["path"]
    if m and cls == "privileged-paths":
        yield "path", m["host"] + m["mid"] + payload


def _original(data: dict, site: Site) -> str:
    if site.key:
        return str(site.path[-1])
    node = data
    for part in site.path:
        node = node[part]
    return node


def field_cases(cls: str) -> Iterator[Case]:
    """Every string field x the class's payloads x the placements that fit the value."""
    for fid, site in sorted(sites().items()):
        data = base_data(site.base)
        original = _original(data, site)
        for payload in _payloads(cls, baseline(site.base), original):
            for placement, new in _placements(cls, original, payload, site.key):
                yield Case(cls, fid, site.base, placement, payload,
                           lambda site=site, new=new: _with(site, new), new, site)


def _with(site: Site, new: str) -> str:
    return to_yaml(with_value(base_data(site.base), site, lambda _: new)[0])


def _added(change: Callable[[dict], None]) -> Callable[[], str]:
    def text() -> str:
        data = copy.deepcopy(base_data("lab"))
        change(data)
        return to_yaml(data)
    return text


def _login(name: str, hosts: str) -> Callable[[dict], None]:
    return lambda d: d["node_groups"].insert(0, {"name": name, "type": "head", "role": "login", "count": 1,
                                                 "hostnames": hosts, "racks": "lab01"})


ENTITY_COLLISIONS: dict[str, Callable[[dict], None]] = {
    "host HEAD01 before head01": _login("login", "HEAD01"),
    "node group GPU beside gpu": _login("GPU", "login01"),
    "partition GPU beside gpu": lambda d: d["slurm"]["partitions"].append({"name": "GPU", "groups": ["gpu"]}),
    "QOS URGENT beside urgent": lambda d: d["slurm"]["qos"].append({"name": "URGENT", "priority": 1}),
    "node type HGX beside hgx": lambda d: (d["node_types"].update(HGX={"server": "hgx-h100-8gpu"}),
                                           d["node_groups"].append({"name": "gpu2", "type": "HGX", "count": 1,
                                                                    "hostnames": "gpu03", "racks": "lab01"}),
                                           d["fabrics"][0]["attach"].append({"group": "gpu2", "nic_role": "compute"})),
    "rack LAB01 beside lab01": lambda d: (d["racks"].append({"names": "LAB01", "profile": "lab"}),
                                          _login("login", "login01")(d), d["node_groups"][0].update(racks="LAB01")),
    "storage HOME beside home": lambda d: d["storage"].append({"name": "HOME", "tier": "local", "mount": "/scratch2"}),
}
"""an added entity whose name differs from an existing one's only in case (the issue's login node HEAD01)"""


def rename(node: object, old: str, new: str) -> object:
    """``node`` with the name ``old`` replaced everywhere it names something: equal strings and keys, and the
    host of ``old:/path`` exports."""
    if isinstance(node, dict):
        return {(new if k == old else k): rename(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [rename(v, old, new) for v in node]
    if isinstance(node, str):
        return new if node == old else new + node[len(old):] if node.startswith(old + ":/") else node
    return node


RENAMED = {"head01": "host", "gpu": "group", "hgx": "node_type", "lab01": "rack", "urgent": "qos", "home": "storage",
           "ib": "fabric", "inband": "pool"}
"""lab entities a name-like payload renames everywhere (a single field's change breaks the references to it)"""


def rename_cases(cls: str) -> Iterator[Case]:
    b = baseline("lab")
    for old, namespace in RENAMED.items():
        for payload in _payloads(cls, b, old):
            yield Case(cls, f"{namespace} {old} renamed everywhere", "lab", "rename", payload,
                       lambda old=old, payload=payload: to_yaml(rename(base_data("lab"), old, payload)))


def entity_cases() -> Iterator[Case]:
    for what, change in ENTITY_COLLISIONS.items():
        yield Case(P.CASE_COLLISION, what, "lab", "added", what.split()[-3], _added(change))


HIDDEN_ITEM = ('  - {name: evil, tier: nfs, export: "head01:/export/evil", mount: /opt/evil, capacity_tb: 1,'
               ' read_gb_per_s: 1, write_gb_per_s: 1}')


def _text_sites(text: str) -> Iterator[tuple[str, Callable[[str], str]]]:
    """(where, put the character there) in the raw lab-2node.yaml text."""
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            cut = len(line) // 2
            yield f"comment line {n + 1}", lambda c, n=n, cut=cut: "\n".join(
                lines[:n] + [lines[n][:cut] + c + lines[n][cut:]] + lines[n + 1:])
    scratch = text.index("  - {name: scratch")
    yield "comment hiding a storage item", lambda c: (text[:scratch] + "  # home and scratch" + c + HIDDEN_ITEM
                                                      + "\n" + text[scratch:])
    for where, old, new in (("plain free text (description)", "description: Two HGX", "description: Two{c} HGX"),
                            ("quoted free text (description)", "description: Two HGX H100 nodes and a head node",
                             'description: "Two HGX{c} H100 nodes and a head node'),
                            ("mount path", "mount: /raid", "mount: /ra{c}id"),
                            ("quoted host list", 'hostnames: "gpu[01-02]"', 'hostnames: "gpu[01{c}-02]"')):
        assert old in text, old
        if where.startswith("quoted free"):
            line = next(li for li in lines if li.startswith(old))
            yield where, lambda c, line=line: text.replace(line, line.replace(old, new.format(c=c)) + '"', 1)
        else:
            yield where, lambda c, old=old, new=new: text.replace(old, new.format(c=c), 1)


def text_cases() -> Iterator[Case]:
    text = (BLUEPRINTS / "lab-2node.yaml").read_text()
    for where, put in _text_sites(text):
        for label, char in P.READER_HIDING.items():
            yield Case("reader-hiding", f"YAML text: {where}", "lab-2node", "raw", char,
                       lambda put=put, char=char: put(char))


def cases(cls: str) -> Iterator[Case]:
    yield from field_cases(cls)
    if cls in P.NAME_LIKE:
        yield from rename_cases(cls)
    if cls == P.CASE_COLLISION:
        yield from entity_cases()
    if cls == "reader-hiding":
        yield from text_cases()


# --- judging ----------------------------------------------------------------------------------------------

@cache
def _lab2_baseline() -> Positions:
    out = run_text((BLUEPRINTS / "lab-2node.yaml").read_text())
    assert out.kind == "rendered", out.detail
    return read_positions(out.files)


def judge(case: Case, out: Outcome, parts: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with the outcome of ``case`` (nothing when refused or rendered-safe); ``parts``: the
    syntax payloads a free-text case holds together."""
    if out.kind == "exit3":
        return [f"exit 3: {out.detail}"]
    if out.kind == "refused":
        return []
    base = _lab2_baseline() if case.base == "lab-2node" else baseline(case.base).positions
    found = violations(read_positions(out.files), base, (parts or (case.payload,)) if case.cls == "syntax" else ())
    if case.placement == "raw":  # the YAML text: a line breaker anywhere, a bidi override or ESC outside
        breaker = case.payload in (P.READER_HIDING[k] for k in P.LINE_BREAKERS)  # quoted free text
        if breaker or "quoted free text" not in case.field:
            found.append("rendered: the file a reviewer reads is not the file that was parsed")
    return found


@dataclass
class ClassResult:
    cls: str
    cases: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # code -> count
    rendered_safe: int = 0
    failures: list[str] = field(default_factory=list)  # "label: why"
    violations: int = 0
    exit3: int = 0
    slowest: tuple[float, str] = (0.0, "")

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    def summary(self) -> str:
        return (f"{self.cls}: {self.cases} cases, {self.refused_total} refused, {self.rendered_safe} rendered-safe, "
                f"{self.violations} violations, {self.exit3} exit 3")


def _count(r: ClassResult, case: Case, out: Outcome, wrong: list[str], dt: float, n: int = 1) -> None:
    if dt > r.slowest[0]:
        r.slowest = (dt, case.label())
    r.cases += n
    if out.kind == "exit3":
        r.exit3 += n
    elif wrong:
        r.violations += n
    elif out.kind == "refused":
        r.refused[out.detail] = r.refused.get(out.detail, 0) + n
    else:
        r.rendered_safe += n
    r.failures += [f"{case.label()}: {w}" for w in wrong]


def run_class(cls: str) -> ClassResult:
    """Every case of the class. A free-text field (description, vendor, sources, reason, CPU model) takes
    each payload alone through validate, and every payload it accepts together in one render (as
    test_injection does): free text names nothing, so one render shows whether any of them reaches a
    position."""
    r = ClassResult(cls)
    accepted: dict[str, list[Case]] = {}
    for case in cases(cls):
        free = case.site is not None and FREE_TEXT.match(case.field)
        t0 = time.perf_counter()
        out = run_text(case.text(), render=not free)
        if free and out.kind == "rendered":
            accepted.setdefault(case.field, []).append(case)
            continue
        _count(r, case, out, judge(case, out), time.perf_counter() - t0)
    for fid, group in accepted.items():
        together = " ".join(c.new for c in group)
        case = Case(cls, fid, group[0].base, f"{len(group)} together", together,
                    lambda: together, together, group[0].site)
        t0 = time.perf_counter()
        out = run_text(_with(group[0].site, together))
        _count(r, case, out, judge(case, out, tuple(c.payload for c in group)), time.perf_counter() - t0, len(group))
    return r
