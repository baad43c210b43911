"""Converge one shipped role for real on localhost (ansible-playbook, connection local): the helpers of the
role tests whose install paths can all be moved into a temporary directory. (ansible-lint runs once over every
role: tests/integration/test_ansible_real.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from clusterctl import yamlout
from tests.conftest import require_tool
from tests.helpers import REPO


def tool(name: str) -> str:
    """The path of an Ansible tool (tests/conftest.py: missing is a skip, a failure in CI)."""
    return require_tool(name)


def converge(role: str, root: Path, variables: dict, *, check: bool = False) -> subprocess.CompletedProcess:
    """ansible-playbook of a play applying ``role`` with ``variables`` to localhost, from ``root`` (``check``:
    in check mode, changing nothing)."""
    playbook = root / "play.yml"
    playbook.write_text(yamlout.dump([{"name": role, "hosts": "localhost", "connection": "local",
                                       "gather_facts": False, "roles": [{"role": role, "vars": variables}]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "roles"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    return subprocess.run([tool("ansible-playbook"), "-i", "localhost,", "-e",
                           f"ansible_python_interpreter={sys.executable}", *(["--check"] if check else []),
                           str(playbook)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def changed(stdout: str) -> int:
    """changed= of localhost in the play recap."""
    return int(re.search(r"localhost\s*:.*changed=(\d+)", stdout).group(1))
