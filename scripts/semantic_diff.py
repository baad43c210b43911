"""Compare this checkout's render of every shipped blueprint with the golden files of a git revision, as data.

    python3 scripts/semantic_diff.py [REV]      (REV: a commit whose goldens are the "before"; default HEAD)

A change of layout (YAML quoting, comments, indentation) is not a difference; a change of meaning is:

- YAML (``.yml``/``.yaml``) and JSON: the loaded data (``!unsafe`` read as a plain string);
- Slurm ``*.conf`` and NCCL ``.conf``: the set of ``Key=Value`` lines, comments and blank lines dropped;
- Python: the AST (comments and quoting style dropped; docstrings kept);
- everything else: the lines, comment lines included.

Prints one line per differing file (or file present on one side only) and exits 1 if there is any.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from clusterctl.blueprint.load import load_blueprint  # noqa: E402
from clusterctl.plan import expand  # noqa: E402
from clusterctl.targets import render_targets  # noqa: E402
from clusterctl import yamlout  # noqa: E402


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def old_files(rev: str, name: str) -> dict[str, str]:
    prefix = f"tests/golden/{name}/"
    paths = [p for p in _git("ls-tree", "-r", "--name-only", rev, prefix).splitlines() if p]
    return {p.removeprefix(prefix): _git("show", f"{rev}:{p}") for p in paths}


def key_value_lines(text: str) -> list[tuple[tuple[str, str], ...]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        out.append(tuple(tuple(tok.split("=", 1)) if "=" in tok else (tok, "") for tok in line.split()))
    return sorted(out)


def meaning(path: str, text: str) -> object:
    if path.endswith((".yml", ".yaml")):
        return yamlout.load(text)
    if path.endswith(".json"):
        return json.loads(text)
    if path.endswith(".py"):
        return ast.dump(ast.parse(text))
    if path.endswith(".conf") and (path.startswith("slurm/") or path.startswith("nccl/")):
        return key_value_lines(text)
    return text.splitlines()


def differences(rev: str) -> list[str]:
    out = []
    for bp in sorted((REPO / "blueprints").glob("*.yaml")):
        name = bp.stem
        new = {p: t for p, t in render_targets(expand(load_blueprint(bp))).items()
               if not p.startswith("ansible/roles/")}
        old = old_files(rev, name)
        for path in sorted(set(new) | set(old)):
            if path not in old:
                out.append(f"{name}/{path}: added")
            elif path not in new:
                out.append(f"{name}/{path}: removed")
            elif meaning(path, old[path]) != meaning(path, new[path]):
                out.append(f"{name}/{path}: differs")
    return out


def main() -> int:
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    diffs = differences(rev)
    for line in diffs:
        print(line)
    print(f"{len(diffs)} semantic difference(s) against {rev}", file=sys.stderr)
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
