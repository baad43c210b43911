"""The day0 scenario's ``bmc`` step: the rendered BMC play against one Redfish emulator per rehearsal node, whose
power actions power the node itself off and on (docs/rehearse.md, "The day0 scenario").

The emulators (:mod:`clusterctl.rehearse.fake.redfish`) listen at the nodes' planned BMC addresses, which
:mod:`clusterctl.rehearse.node.bmc_net` puts on this machine; their processes are recorded in the rehearsal's
state (``down`` stops them) and stopped when the step ends, and the addresses removed. The play's credentials are
the vault variables the inventory names (``bmc_secret``), each ``{user, password}``: written by the rehearsal into
an ansible-vault file (0600) encrypted with a random password kept in a 0600 file that ``--vault-password-file``
names: neither the password nor the credentials reach a command line or a log.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterctl import yamlout
from clusterctl.plan.host_identity import host_identities
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.site_records import site_records
from clusterctl.rehearse.fake.redfish import read_credentials, start_bmcs
from clusterctl.rehearse.node import bmc_net, lifecycle
from clusterctl.rehearse.node.files import write_text_atomic
from clusterctl.rehearse.node.state import State, save, state_dir
from clusterctl.rehearse.scenario.deploy import run_playbook
from clusterctl.rehearse.scenario.observe import runner_events
from clusterctl.rehearse.steps import FAILED, OK, HostOutcome, Record, StepFailed

BMC_PLAY = "bmc.yml"
"""the rendered play (``ansible/bmc.yml``): power state, one-time boot device, power cycle through Redfish"""
POWER_TIMEOUT_S = 60.0


@dataclass
class PowerLog:
    """What the emulated BMCs did to the nodes: each power action, done in a thread of its own (the emulator's
    event reader must not wait for a node to stop), and its outcome."""

    actions: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    done: dict[str, threading.Event] = field(default_factory=dict)
    powered_on: dict[str, float] = field(default_factory=dict)
    """host -> this machine's time (``time.time()``) when its node was last powered on"""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self, state: State):
        """``on_power(host, action)`` for :func:`start_bmcs`: off, on (eth0 without an address: it waits for
        DHCP) or restart of the host's rehearsal node."""
        def act(host: str, action: str) -> None:
            try:
                if action in ("off", "restart"):
                    lifecycle.power_off(state, host)
                if action in ("on", "restart"):
                    self.powered_on[host] = time.time()
                    lifecycle.power_on(state, host, inband_address=False)
            except Exception as exc:  # reported by the dhcp step, never lost in a thread
                with self.lock:
                    self.errors.append(f"{host} {action}: {exc}")
            finally:
                if action in ("on", "restart"):
                    self.done.setdefault(host, threading.Event()).set()

        def on_power(host: str, action: str) -> None:
            with self.lock:
                self.actions.append((host, action))
                if action in ("on", "restart"):
                    self.done.setdefault(host, threading.Event()).clear()
            threading.Thread(target=act, args=(host, action), name=f"power-{host}", daemon=True).start()
        return on_power

    def wait(self, host: str, timeout: float) -> bool:
        """True once ``host`` was powered on again without an error."""
        event = self.done.get(host)
        return event is not None and event.wait(timeout) and not self.errors

    def describe(self) -> str:
        return (", ".join(f"{h} {a}" for h, a in self.actions) or "no power action") + \
            ("; " + "; ".join(self.errors) if self.errors else "")


def bmc_addresses(plan: ClusterPlan, hosts: list[str]) -> dict[str, str]:
    """host -> its planned BMC address (the ``bmc`` records of ``plan.site_records``), for ``hosts``."""
    wanted = set(hosts)
    return {r.owner: r.address for r in site_records(plan) if r.kind == "bmc" and r.owner in wanted}


def write_vault(state: State, plan: ClusterPlan, credentials: Path) -> tuple[Path, Path]:
    """The ansible-vault file holding every BMC secret the inventory names (each the emulators' credentials) and
    its password file, both 0600 under the rehearsal's state directory."""
    from ansible.parsing.vault import VaultLib, VaultSecret  # the rehearse extra: only a rehearsal needs it

    user, password = read_credentials(credentials)
    names = sorted({i.bmc_secret for i in host_identities(plan).values() if i.bmc_secret})
    sdir = state_dir(Path(state.dir))
    key = secrets.token_urlsafe(32)
    pass_file, vault_file = sdir / "bmc-vault-password", sdir / "bmc-vault.yml"
    write_text_atomic(pass_file, key + "\n", 0o600)
    text = yamlout.body({n: {"user": user, "password": password} for n in names})
    sealed = VaultLib([("default", VaultSecret(key.encode()))]).encrypt(text)
    write_text_atomic(vault_file, sealed.decode(), 0o600)
    return vault_file, pass_file


@dataclass
class BmcCycle:
    """Emulated BMCs for every node; the rendered BMC play reads their power state, sets a one-time PXE boot and
    power-cycles ``target``, whose node restarts with eth0 unaddressed; the play reads its state back."""

    plan: ClusterPlan
    target: str
    power: PowerLog
    name: str = "bmc"

    def run(self, state: State, record: Record) -> None:
        out = Path(state.dir)
        if not (out / "ansible" / BMC_PLAY).is_file():
            raise StepFailed(f"no rendered ansible/{BMC_PLAY}: the render has no BMC play")
        bmcs = bmc_addresses(self.plan, [n.name for n in state.nodes])
        if self.target not in bmcs:
            raise StepFailed(f"{self.target} has no planned BMC address")
        bmc_net.add(state, sorted(bmcs.values()))
        fleet = None
        try:
            fleet = start_bmcs(state_dir(out), bmcs, self.power.handler(state))
            state.services += fleet.processes
            save(state)
            vault, pass_file = write_vault(state, self.plan, fleet.credentials)
            self._play(state, record, sorted(bmcs), vault, pass_file, str(fleet.ca_cert))
        finally:
            if fleet is not None:
                emulators = list(fleet.processes)
                fleet.stop()  # empties fleet.processes
                state.services = [p for p in state.services if p not in emulators]
                save(state)
            bmc_net.remove(state)
            state.bmc_interface = ""
            save(state)

    def _play(self, state: State, record: Record, hosts: list[str], vault: Path, pass_file: Path, ca: str) -> None:
        """Three runs of the play, as an operator would: ``status`` on every BMC, then ``pxe`` and ``cycle`` on
        the target's alone (``--limit``); each host's outcome from the play's own report of the state."""
        common = ["-e", f"@{vault}", "--vault-password-file", str(pass_file), "-e", f"bmc_ca_path={ca}"]
        reports: dict[str, list[str]] = {h: [] for h in hosts}
        failed: dict[str, list[str]] = {h: [] for h in hosts}
        seconds: dict[str, float] = {h: 0.0 for h in hosts}
        for action, limit in (("status", hosts), ("pxe", [self.target]), ("cycle", [self.target])):
            t0 = time.monotonic()
            ident = f"bmc-{action}"
            run = run_playbook(state, limit, ident=ident, playbook=BMC_PLAY, skip_tags=(),
                               extra_args=[*common, "-e", f"bmc_action={action}"])
            said = play_reports(runner_events(state, ident))
            for h in limit:
                seconds[h] += time.monotonic() - t0
                failed[h] += [f"{action}: {f}" for f in run.failed.get(h, [])]
                if h not in said and not run.failed.get(h):
                    failed[h].append(f"{action}: the play reported no state (rc {run.rc})")
                reports[h].append(f"{action}: {said.get(h, '?')}")
        cycled = [h for h, a in self.power.actions if a in ("restart", "on")]
        for host in hosts:
            wrong = failed[host]
            if host == self.target and host not in cycled:
                wrong.append("the play's cycle did not power-cycle its node")
            if host != self.target and host in cycled:
                wrong.append("its node was power-cycled too")
            if host == self.target and not reports[host][-1].startswith("cycle: PowerState On"):
                wrong.append(f"not On after the cycle: {reports[host][-1]}")
            record(host, HostOutcome(FAILED if wrong else OK, seconds[host],
                                     "; ".join(wrong) or "; ".join(reports[host])))


REPORT_TASK = "Report the state"
"""the play's last task: a debug message with the power state and boot override it read back"""


def play_reports(events: list[dict]) -> dict[str, str]:
    """host -> what the play's report task said after the host's name and BMC ('PowerState On, boot override
    Pxe (Once)')."""
    found = {}
    for e in events:
        data = e.get("event_data") or {}
        if e.get("event") == "runner_on_ok" and data.get("task") == REPORT_TASK and data.get("host"):
            msg = str((data.get("res") or {}).get("msg", ""))
            found[data["host"]] = " ".join(msg.split(": ", 1)[-1].split())
    return found
