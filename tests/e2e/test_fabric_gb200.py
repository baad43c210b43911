"""The ``fabric`` scenario on a slice of gb200-nvl72-8rack (``converged``, ``oob``) through the real CLI, as
test_fabric.py runs hgx-h200-roce-1024's, in the second rehearsal group (tests/conftest.py, XDIST_GROUPS: beside the lab
rehearsal, the longer). Its networks are its own: the in-band pool 10.40.0.0/22,
the switch links and loopbacks of its plan, bridges and namespaces named from its state directory."""

from __future__ import annotations

import pytest

from clusterctl.rehearse.node.state import load
from tests.e2e.conftest import steps
from tests.e2e.test_fabric import assert_fabric_passed, run_fabric
from tests.e2e.test_nodes import leftovers

pytestmark = pytest.mark.e2e


def test_gb200_converged_fabric_slice_passes(tmp_path_factory):
    out, summary = run_fabric(tmp_path_factory, "gb200-nvl72-8rack")
    assert_fabric_passed(summary, ("converged", "oob"))
    assert summary["fabric"]["converged"]["leaves"] == ["converged-leaf01", "converged-leaf05"]
    # one GB200 tray under each leaf, both storage ports addressed by host_network's netplan (L3 to the host)
    assert summary["fabric"]["converged"]["hosts"] == ["gb001", "gb129"]
    assert steps(summary)["rails"]["hosts"]["gb129"]["detail"] == "enP6p3s0f0np0, enP6p3s0f1np1"
    assert leftovers(load(out)) == []
