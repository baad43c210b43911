#!/usr/bin/python3
"""One emulated BMC: sushy-tools' Redfish emulator (the Flask app of ``sushy_tools.emulator.main``) with its
fake systems driver, serving one ComputerSystem over HTTPS with basic authentication on one address.

Started by :mod:`clusterctl.rehearse.fake.redfish` as ``python3 redfish_bmc.py CONFIG.json`` (a program of its
own, standard library plus sushy-tools, like :mod:`.cloud`); CONFIG names everything, no secret is on the command
line: ``{"host", "uuid", "listen", "port", "cert", "key", "auth_file", "state_dir", "events"}``. ``auth_file`` is
an htpasswd file of bcrypt digests (the only form sushy-tools' ``auth_basic`` accepts), 0600.

The one hook: sushy-tools' ``Application.systems`` builds ``fakedriver.FakeDriver`` by its module attribute, so
this program puts :class:`RehearsalSystem` there before the first request. It differs from the fake driver in
two ways: a power change applies at once (the fake driver applies it 1 to 11 s later, at random), and each one
is reported as a JSON line ``{"event": "power", "host", "action"}`` (action ``on``, ``off`` or ``restart``) on
the ``events`` FIFO the harness reads, so the rehearsal restarts the node. ``{"event": "ready"}`` follows the
bind, ``{"event": "failed", "message"}`` any error before serving. Each line is shorter than PIPE_BUF, so the
lines of several BMCs sharing the FIFO never interleave.
"""

from __future__ import annotations

import json
import os
import ssl
import sys

POWER_ACTIONS = {
    "On": "on", "ForceOn": "on",
    "ForceOff": "off", "GracefulShutdown": "off",
    "ForceRestart": "restart", "GracefulRestart": "restart", "PowerCycle": "restart",
}
"""Redfish ResetType (DSP2046, ResetType enumeration) -> what happens to the rehearsal node"""


def report(events_fd: int, event: dict) -> None:
    os.write(events_fd, (json.dumps(event, sort_keys=True) + "\n").encode())


def rehearsal_system_class(fakedriver, error, host: str, events_fd: int):
    """The fake driver with power changes applied at once and reported on the events FIFO."""

    class RehearsalSystem(fakedriver.FakeDriver):
        def set_power_state(self, identity, state):
            action = POWER_ACTIONS.get(state)
            if action is None:
                raise error.NotSupportedError(f"Power state {state} is not supported")
            self._update(self._get(identity), power_state="Off" if action == "off" else "On", pending_power=None)
            report(events_fd, {"event": "power", "host": host, "action": action})

    return RehearsalSystem


def serve(config: dict, events_fd: int) -> None:
    from sushy_tools import error  # imported here so a missing sushy-tools is reported on the FIFO
    from sushy_tools.emulator import main as emulator
    from sushy_tools.emulator.resources.systems import fakedriver
    from werkzeug.serving import make_server

    fakedriver.FakeDriver = rehearsal_system_class(fakedriver, error, config["host"], events_fd)
    emulator.app.configure(extra_config={
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_AUTH_FILE": config["auth_file"],
        "SUSHY_EMULATOR_STATE_DIR": config["state_dir"],
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [{
            "uuid": config["uuid"], "name": config["host"], "power_state": "On", "external_notifier": False,
            "nics": [],
        }],
    })
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config["cert"], config["key"])
    server = make_server(config["listen"], int(config["port"]), emulator.app, threaded=True, ssl_context=context)
    report(events_fd, {"event": "ready", "host": config["host"]})
    server.serve_forever()


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        config = json.load(f)
    events_fd = os.open(config["events"], os.O_WRONLY)
    try:
        serve(config, events_fd)
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the harness, which waits for a line
        report(events_fd, {"event": "failed", "host": config["host"], "message": f"{type(exc).__name__}: {exc}"})
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
