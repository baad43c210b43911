"""The command line, run by forking a process that has imported it once: what :func:`tests.helpers.cli` uses.

``python -m clusterctl`` spends about 0.7 s of CPU importing pydantic's models, the rules and typer before it reads
its arguments, and the suite runs the command line over a thousand times. This server is a Python process of its own
(single-threaded, so forking it is safe) that imports :mod:`clusterctl.cli` and the modules its commands import
lazily, then forks one child per request. The child is what ``python -m clusterctl ARGS`` would be after its imports:
its own process, in the request's working directory and environment, with fresh standard streams on files (stdin
from the request's input or /dev/null), ``clusterctl`` run as ``__main__`` by :func:`runpy.run_module` (as ``-m``
does), and its exit status that of ``SystemExit`` (1 and a traceback for any other exception, as Python's).

What a forked child cannot be is a fresh interpreter: every child of one server has the server's hash seed and
the state its imports left (clusterctl keeps none that a command changes). So :func:`tests.helpers.cli` runs a real
subprocess whenever the request sets a ``PYTHON*`` variable (the determinism tests give each render its own
``PYTHONHASHSEED``), and tests that need the process itself (signals, locks, concurrent runs) start it themselves.

Protocol: one request per line on stdin, a JSON object ``{"args", "cwd", "env", "input"}``; one JSON line back,
``{"rc", "stdout", "stderr"}`` with the streams' bytes in base64 (the client decodes them as ``subprocess.run(...,
text=True)`` does: the locale's encoding, strictly, universal newlines).
"""

from __future__ import annotations

import base64
import importlib
import json
import locale
import os
import runpy
import sys
import tempfile
import traceback

PRELOAD = ("clusterctl.cli", "clusterctl.targets", "clusterctl.report", "clusterctl.validate", "clusterctl.starter",
           "clusterctl.rules.registry", "jinja2")
"""imported once by the server (the commands import the later ones when they run)"""


def _child(request: dict, out_path: str, err_path: str, in_path: str) -> None:
    """In the forked child: become ``python -m clusterctl ARGS`` and exit with its status. Never returns."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, flags in ((0, in_path, os.O_RDONLY), (1, out_path, os.O_WRONLY), (2, err_path, os.O_WRONLY)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        encoding = locale.getpreferredencoding(False)
        sys.stdin = open(0, "r", encoding=encoding, closefd=False)
        sys.stdout = open(1, "w", encoding=encoding, closefd=False)
        sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)
        sys.argv = ["clusterctl", *request["args"]]
        try:
            runpy.run_module("clusterctl", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001 - as Python prints an uncaught exception, status 1
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to write
                pass
    finally:
        os._exit(code)


def serve() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    tmp = tempfile.mkdtemp(prefix="clusterctl-cli-server-")
    for line in sys.stdin:
        request = json.loads(line)
        out_path, err_path, in_path = (os.path.join(tmp, n) for n in ("out", "err", "in"))
        for path in (out_path, err_path):
            open(path, "wb").close()
        with open(in_path, "wb") as f:
            if request.get("input") is not None:
                f.write(request["input"].encode(locale.getpreferredencoding(False)))
        pid = os.fork()
        if pid == 0:
            _child(request, out_path, err_path, in_path if request.get("input") is not None else os.devnull)
        _, status = os.waitpid(pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        with open(out_path, "rb") as f:
            out = f.read()
        with open(err_path, "rb") as f:
            err = f.read()
        reply = {"rc": rc, "stdout": base64.b64encode(out).decode(), "stderr": base64.b64encode(err).decode()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
