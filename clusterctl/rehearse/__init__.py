"""``clusterctl rehearse``: boot the blueprint's hosts as isolated nodes on this machine and prove the
rendered files work there (docs/rehearse.md).

Split by job: :mod:`.node` (the node machinery: probe, state, boot and teardown, the nodes' init, SSH and the
one subprocess runner), :mod:`.scenario` (one module per scenario and the registry that orders them),
:mod:`.fake` (the provider APIs a node calls); around them :mod:`.select` (which blueprint hosts become
nodes), :mod:`.variant` (the blueprint as this machine can run it), :mod:`.steps` (the pluggable checks that
run once the nodes answer SSH), :mod:`.suite` (what one run boots and runs), :mod:`.run` (boot, steps,
teardown) and :mod:`.ui` (per-step, per-host progress).
"""

from __future__ import annotations


class RehearsalError(Exception):
    """The rehearsal cannot start or be torn down for a reason the user can fix (exit 2): not root, a
    missing namespace kind or program, a state directory in use. Carries a hint."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint
