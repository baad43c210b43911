"""Every scenario, in the order ``--scenario all`` runs them on one boot, each leaving the cluster as the next
expects it (docs/rehearse.md):

1. ``version-guard`` on fresh nodes: the files rendered for another Slurm release must stop at the preflight;
2. ``deploy``: converge, converge again (changed=0), testinfra, srun;
3. ``scratch`` (a node-local tier on nodes with data NVMe): one compute node's loop-device stand-in, given before
   deploy's first converge, is the scratch XFS mounted before slurmd, with job /tmp and enroot data on it; full, the
   health check drains the node;
4. ``node-failure``: the health check drains a node that lost a GPU, and returns it;
5. ``monitoring``: Prometheus scrapes every node's exporters; stopping slurmd fires the rendered alert;
6. ``failover`` (a backup controller and a shared StateSaveLocation);
   ``users`` (a login node): a user of the directory the rehearsal serves logs in and runs srun;
   ``db-failover`` (a replicated pair of slurmdbd hosts): the accounting host powered off and back;
7. ``day0`` (an inventory with the compute hosts' MACs, two controllers): the BMC play power-cycles a compute node,
   which comes back by DHCP, resolves every planned name and follows the controllers' time;
8. ``pull``: every node applies the rendered tree itself from a git remote, gated by rollout.yml;
9. ``elastic`` (cloud blueprints with elastic node groups, and then alone);
10. ``add-node``: last, because it re-renders the changed blueprint over the rehearsal's own adjustments.

``fabric`` boots other nodes (switches and the hosts under them) and runs alone: ``all`` does not include it.
``install`` is ``deploy`` without its second converge, alone (a new image or Slurm release: what installing shows).
"""

from __future__ import annotations

from clusterctl.rehearse.scenario.add_node import AddNodeScenario
from clusterctl.rehearse.scenario.base import Scenario
from clusterctl.rehearse.scenario.day0 import Day0Scenario
from clusterctl.rehearse.scenario.db_failover import DbFailoverScenario
from clusterctl.rehearse.scenario.deploy import DeployScenario, InstallScenario
from clusterctl.rehearse.scenario.elastic import ElasticScenario
from clusterctl.rehearse.scenario.fabric import FabricScenario
from clusterctl.rehearse.scenario.failover import FailoverScenario
from clusterctl.rehearse.scenario.monitoring import MonitoringScenario
from clusterctl.rehearse.scenario.node_failure import NodeFailureScenario
from clusterctl.rehearse.scenario.pull import PullScenario
from clusterctl.rehearse.scenario.scratch import ScratchScenario
from clusterctl.rehearse.scenario.users import UsersScenario
from clusterctl.rehearse.scenario.version_guard import VersionGuardScenario

SCENARIOS: tuple[type[Scenario], ...] = (VersionGuardScenario, DeployScenario, ScratchScenario, NodeFailureScenario,
                                         MonitoringScenario, FailoverScenario, UsersScenario, DbFailoverScenario, Day0Scenario, PullScenario,
                                         ElasticScenario,
                                         AddNodeScenario)
ORDER = tuple(s.name for s in SCENARIOS)
"""the scenarios of ``--scenario all``, in the order they run"""
ALONE: tuple[type[Scenario], ...] = (FabricScenario, InstallScenario)
"""scenarios only run when named (``--scenario fabric``, ``--scenario install``), never by ``all``"""
