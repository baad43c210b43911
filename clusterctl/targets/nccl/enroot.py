"""``nccl/<node_type>.enroot.env``: the NCCL settings of ``nccl/<node_type>.conf`` as an enroot environment file,
installed as ``/etc/enroot/environ.d/50-nccl.env`` so a pyxis/enroot job keeps NCCL_IB_HCA, NCCL_SOCKET_IFNAME,
NCCL_IB_TC and the rest inside its container (the host's /etc/nccl.conf is not in the image).

The language (enroot doc/configuration.md, "Environment configuration files": ``.env`` files in the format of
doc/image-format.md, /etc/environment): one ``NAME=value`` per line, ``#`` lines are comments; enroot's runtime
(src/runtime.sh, src/common.sh) substitutes ``${NAME}`` from the host environment, then strips one pair of quotes
around the whole value, and enroot-switchroot sets the rest of the line as the value. So every value here is
written in double quotes (a value that itself begins and ends with a quote keeps them), and a value holding
``${`` or a control character is refused: enroot has no escape for either.

An environment file rather than a bind mount of /etc/nccl.conf: NCCL takes a variable of the environment over
its configuration file, and an image's own ``ENV NCCL_*`` (baked for some other machine) would beat a mounted
file; environ.d is read after the image's /etc/environment, so the machine's fabric facts win. pyxis gives the
container's environment precedence over the job's exported variables (pyxis --container-env: "their existing
values in the image take precedence"): a job that needs its own NCCL value passes ``srun --container-env=NAME``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clusterctl.plan.model import ClusterPlan, NodeTypePlan
from clusterctl.targets.common import ConfigValueError, header
from clusterctl.targets.nccl.settings import Setting
from clusterctl.yamlout import comment

ENROOT_ENV_PATH = "/etc/enroot/environ.d/50-nccl.env"
"""where the nccl role installs nccl/<node_type>.enroot.env (its nccl_enroot_env_path default)"""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def uses_enroot(plan: ClusterPlan) -> bool:
    """Jobs run containers with enroot (and pyxis): software.containers."""
    return plan.software is not None and plan.software.containers == "enroot"


def env_line(name: str, value: str, what: str) -> str:
    """``NAME="value"`` for an enroot environment file, or :class:`ConfigValueError` for what it cannot hold."""
    bad = [] if _NAME.fullmatch(name) else [f"the name {name!r}"]
    if "${" in value:
        bad.append("'${' (enroot substitutes ${NAME} from the host environment; there is no escape)")
    if not value.isprintable():
        bad.append("a control character (a newline would end the value)")
    if bad:
        raise ConfigValueError(f"{what} {comment(value)!r} cannot be written to {ENROOT_ENV_PATH}: {', '.join(bad)}",
                               f"write {what} without '${{' and control characters")
    return f'{name}="{value}"'


def enroot_env(plan: ClusterPlan, nt: NodeTypePlan, settings: Sequence[Setting]) -> str:
    """The environment file of one node type: the key lines of its nccl.conf, same order, same values."""
    lines = [header(plan).rstrip("\n"),
             f"# NCCL settings of node type '{comment(nt.name)}' for containers (enroot/pyxis), installed as",
             f"# {ENROOT_ENV_PATH}: the values of /etc/nccl.conf (nccl/{comment(nt.name)}.conf), where each is",
             "# explained. They take precedence over the job's own variables (pyxis); srun --container-env=NAME",
             "# keeps a job's value. Sources: docs/nccl.md (clusterctl)."]
    lines += [env_line(s.key, s.value, f"{s.key} of node type {nt.name}") for s in settings if s.key]
    return "\n".join(lines) + "\n"
