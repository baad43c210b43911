"""No instruction puts a secret on a command line (issue 9, item 6).

A command's arguments are visible to every local user (``ps``, /proc/PID/cmdline) and land in shell history,
so a secret must reach a command through a file or stdin. This scans every place that tells a user what to
run - README.md, docs/, templates/, roles/, the package's own messages and the rendered ``Pulumi.yaml`` of
every cloud blueprint - for the forms that put one there, and checks the scanner on the forms it must catch.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from clusterctl.blueprint.inventory_csv import SECRET_NAME as VAULT_VARIABLE, parse_inventory_text
from clusterctl.blueprint.load import load_blueprint
from clusterctl.plan import expand
from clusterctl.targets import pulumi as pulumi_target
from tests.helpers import BLUEPRINTS, REPO

SECRET_NAME = re.compile(r"munge|pass|secret|token|private|vault_", re.I)
JINJA = re.compile(r"\{\{.*?\}\}")
CUT = re.compile(r"[`#;<>|]|&&")
"""where the arguments of one command end on an instruction line (a redirect or pipe feeds stdin instead)"""
MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
PULUMI_SET = re.compile(r"pulumi\s+config\s+set\b(?P<rest>.*)")
ENCRYPT_STRING = re.compile(r"ansible-vault\s+encrypt_string\b(?P<rest>.*)")
EXTRA_VARS = re.compile(r"""(?:\s-e|--extra-vars)[\s=]+['"]?(?!@)(?P<vars>[^'"\n]*)""")
OTHER = (
    re.compile(r"\bsshpass\s+-p\s*\S"),
    re.compile(r"--password[=\s]+[^\s-]"),
    re.compile(r"\bmysql\b.*\s-p\S"),
)


def _arguments(rest: str) -> list[str]:
    """The words of one command's arguments (Jinja placeholders become one word; cut at a redirect/pipe)."""
    text = CUT.split(JINJA.sub("X", rest), 1)[0]
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: still one word per run of non-blanks
        return text.split()


def secret_on_command_line(line: str) -> str | None:
    """Why ``line`` passes a secret as a command-line argument, or None."""
    m = PULUMI_SET.search(line)
    if m:
        words = _arguments(m.group("rest"))
        positional = [w for w in words if not w.startswith("-")]
        if len(positional) >= 2 and ("--secret" in words or SECRET_NAME.search(positional[0])):
            return f"pulumi config set with the value {positional[1]!r} as an argument (give it on stdin)"
    m = ENCRYPT_STRING.search(line)
    if m:
        words = _arguments(m.group("rest"))
        if not {"--stdin-name", "-p", "--prompt"} & set(words):
            plain = [w for w in words if not w.startswith("-")]
            if plain and not all(w in ("X",) for w in plain):
                return "ansible-vault encrypt_string with the string as an argument (use --stdin-name)"
    for m in EXTRA_VARS.finditer(line):
        for word in m.group("vars").split():
            name = word.split("=", 1)[0]
            if "=" in word and SECRET_NAME.search(name):
                return f"extra variable {name} given on the command line (use -e @FILE)"
    for pattern in OTHER:
        if pattern.search(line):
            return f"a password argument ({pattern.pattern})"
    return None


INVENTORIES = [*sorted(BLUEPRINTS.glob("*.csv")), *sorted((REPO / "tests" / "blueprints" / "inventory").glob("*.csv"))]
"""the per-host inventory CSV files shipped and used by tests (docs/inventory.md): a bmc_secret column names a
vault variable, never a value"""


def instruction_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *INVENTORIES]
    for top in ("templates", "roles"):
        files += sorted(p for p in (REPO / top).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    files += sorted((REPO / "clusterctl").rglob("*.py"))
    return files


def rendered_pulumi_projects() -> dict[str, str]:
    out = {}
    for path in sorted(BLUEPRINTS.glob("*.yaml")):
        files = pulumi_target.render(expand(load_blueprint(path)))
        if "pulumi/Pulumi.yaml" in files:
            out[f"{path.name}: pulumi/Pulumi.yaml"] = files["pulumi/Pulumi.yaml"]
    return out


def findings(name: str, text: str) -> list[str]:
    return [f"{name}:{n}: {why}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
            if (why := secret_on_command_line(line))]


def test_no_instruction_puts_a_secret_on_a_command_line():
    found = []
    scanned = 0
    for path in instruction_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        scanned += 1
        found += findings(str(path.relative_to(REPO)), text)
    assert scanned > 50
    assert found == []


def test_rendered_pulumi_projects_take_secrets_on_stdin():
    projects = rendered_pulumi_projects()
    assert len(projects) == 4  # aws-p5, gcp-a3-mega, azure-nd-h100-v5, lab-cloud
    found = [f for name, text in projects.items() for f in findings(name, text)]
    assert found == []
    for name, text in projects.items():
        assert "pulumi config set --secret clusterctl:mungeKey < " in text, name


@pytest.mark.parametrize("line", [
    # what README.md, docs/cloud.md and every rendered Pulumi.yaml said before issue 9
    'pulumi config set --secret clusterctl:mungeKey "$MUNGE_KEY"',
    '#   pulumi config set --secret clusterctl:mungeKey "$(dd if=/dev/urandom bs=1 count=1024 2>/dev/null | base64 -w0)"',
    "pulumi config set --secret clusterctl:mungeKey abc123",
    "pulumi config set clusterctl:dbPassword hunter2",
    "pulumi config set --path --secret 'clusterctl:tokens[0]' abc",
    "ansible-vault encrypt_string 'hunter2' --name vault_munge_key",
    "ansible-vault encrypt_string --name vault_munge_key \"$(cat munge.key)\"",
    "ansible-playbook site.yml -e vault_munge_key=abc",
    "ansible-playbook site.yml --extra-vars 'slurmdbd_storage_pass=hunter2 other=1'",
    'ansible-playbook site.yml -e "munge_key=$(cat key)"',
    "sshpass -p hunter2 ssh node",
    "mysql -u slurm -phunter2",
    "tool --password hunter2",
])
def test_the_scanner_catches_secrets_in_arguments(line):
    assert secret_on_command_line(line), line


@pytest.mark.parametrize("line", [
    "pulumi config set --secret clusterctl:mungeKey < ../../secrets/munge.key.b64",
    "dd if=/dev/urandom bs=1 count=1024 2>/dev/null | base64 -w0 | pulumi config set --secret clusterctl:mungeKey",
    "#   pulumi config set --secret {{ key }} < {{ file }}",
    "#   pulumi config set {{ key }} {{ example }}",
    "pulumi config set clusterctl:keyName my-ec2-key-pair",
    'pulumi config set clusterctl:sshPublicKey "$(cat ~/.ssh/id_ed25519.pub)"',
    "pulumi config set clusterctl:vpcCidr 10.100.0.0/20",
    "lists the `pulumi config set --secret` commands as comments",
    "ansible-vault encrypt_string --stdin-name vault_munge_key < secrets/munge.key.b64 >> secrets/vault.yml",
    "ansible-playbook site.yml -e @../../secrets/vault.yml --ask-vault-pass",
    "ansible-playbook site.yml -e clusterctl_render_dir=/srv/out",
    "password_variable=\"slurmdbd_storage_pass\")",
])
def test_the_scanner_passes_stdin_files_and_non_secrets(line):
    assert secret_on_command_line(line) is None, line


def test_inventories_name_bmc_credentials_and_never_hold_them():
    """The shipped inventories' bmc_secret cells are vault variable names (the reader refuses anything else), and
    no cell of any column holds a user:password pair."""
    assert INVENTORIES
    for path in INVENTORIES:
        inv = parse_inventory_text(path.read_text(), str(path))
        # a host row names its BMC's vault variable; a management device's row (mgmt_mac) has no BMC and names none
        assert inv.rows and all((row.bmc_secret is None) if row.mgmt_mac else
                                (row.bmc_secret is not None and VAULT_VARIABLE.fullmatch(row.bmc_secret))
                                for row in inv.rows), path
        cells = [cell for line in inv.source.lines if not line.startswith("#") for cell in line.split(",")]
        assert not [c for c in cells if ":" in c and not MAC.fullmatch(c)], path
