"""``clusterctl rehearse``: boot the blueprint's hosts as isolated nodes on this machine and prove the
rendered files work there (docs/rehearse.md).

The layers, bottom up: :mod:`.probe` (can this machine host nodes?), :mod:`.state` (the record of every
resource a rehearsal created, written before it is created, so :func:`.lifecycle.down` can undo a crashed
boot), :mod:`.nodes` (boot and tear down nodes: network, UTS, mount and PID namespaces over an overlay of
``/``, each running ``sshd``), :mod:`.select` (which blueprint hosts become nodes), :mod:`.steps` (the
pluggable checks that run once the nodes answer SSH) and :mod:`.ui` (per-step, per-host progress).
"""

from __future__ import annotations


class RehearsalError(Exception):
    """The rehearsal cannot start or be torn down for a reason the user can fix (exit 2): not root, a
    missing namespace kind or program, a state directory in use. Carries a hint."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint
