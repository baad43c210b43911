"""acceptance target: Slurm batch jobs that test the built cluster against ``clusterctl report``'s predictions.

Under ``acceptance/`` (docs/acceptance.md): one ``jobs/<job>.sbatch`` per job (:mod:`.jobs`), ``expected.json``
(each job's expected figure, from the report's own functions: :mod:`.expected`), ``check.py`` (the standard-library
checker, :mod:`.checker` copied verbatim), ``hpl/<group>.dat`` (:mod:`.hpl`), ``ibdiagnet/<fabric>.topo`` (the
subnet_manager target's cabling file, the same function) and ``submit.sh``. Rendered when the plan has Slurm and a
GPU node group in a partition.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import resources

from clusterctl.hidden_chars import shown
from clusterctl.plan.model import ClusterPlan
from clusterctl.plan.subnet_manager import subnet_managers
from clusterctl.targets.acceptance import hpl
from clusterctl.targets.acceptance.jobs import Job, plan_jobs, targets
from clusterctl.targets.common import ConfigValueError, header, path_part
from clusterctl.targets.subnet_manager import topo_file
from clusterctl.yamlout import comment

DIR = "acceptance"
_SBATCH_VALUE = re.compile(r"[A-Za-z0-9_.,:%\[\]+-]+")
"""what an #SBATCH value may hold: sbatch reads these lines itself, without a shell, so nothing is quoted and
anything else is refused"""


_OPTION_SOURCE = {"partition": "Slurm PartitionName", "nodelist": "host list", "job-name": "acceptance job name"}
"""what a refused #SBATCH value came from, for the message"""


def sbatch_script(plan: ClusterPlan, job: Job) -> str:
    lines = ["#!/bin/bash", header(plan).rstrip("\n"), f"# {comment(job.what)}"]
    for key, value in job.options:
        if value is not None and not _SBATCH_VALUE.fullmatch(value):
            what = _OPTION_SOURCE.get(key, f"#SBATCH --{key}")
            raise ConfigValueError(f"{what} {shown(value)} cannot be an #SBATCH --{key} value of the acceptance jobs",
                                   f"write the {what} with letters, digits, '_', '.', '-' (and a host list's brackets)")
        lines.append(f"#SBATCH --{key}" + ("" if value is None else f"={value}"))
    return "\n".join([*lines, "", "set -uo pipefail", *job.body]) + "\n"


def submit_script(plan: ClusterPlan, jobs: list[Job]) -> str:
    return "\n".join([
        "#!/bin/bash", header(plan).rstrip("\n"),
        "# Submit every acceptance job from this directory: their outputs (%x-%j*.out) land here, and",
        "# `python3 check.py` then prints each job's verdict against the report's prediction.",
        "set -euo pipefail", 'cd "$(dirname "$0")"',
        *(f"sbatch {shlex.quote(f'jobs/{j.name}.sbatch')}" for j in jobs)]) + "\n"


def expected_json(plan: ClusterPlan, jobs: list[Job]) -> str:
    data = {"cluster": plan.name, "generated_by": "clusterctl", "jobs": {j.name: j.expected for j in jobs}}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def render(plan: ClusterPlan) -> dict[str, str]:
    jobs = plan_jobs(plan)
    if not jobs:
        return {}
    files = {f"{DIR}/jobs/{path_part(j.name, 'acceptance job name')}.sbatch": sbatch_script(plan, j) for j in jobs}
    files[f"{DIR}/expected.json"] = expected_json(plan, jobs)
    files[f"{DIR}/check.py"] = resources.files(__name__).joinpath("checker.py").read_text()
    files[f"{DIR}/submit.sh"] = submit_script(plan, jobs)
    for j in jobs:
        if j.kind == "hpl":
            e = j.expected
            group = j.name.removeprefix("hpl-")
            files[f"{DIR}/hpl/{group}.dat"] = hpl.hpl_dat(e["n"], e["nb"], e["p"], e["q"])
    fabrics = {j.expected["fabric"] for j in jobs if j.kind == "ibdiagnet"}
    for sm in subnet_managers(plan):
        if sm.fabric.name in fabrics:
            files[f"{DIR}/ibdiagnet/{path_part(sm.fabric.name, 'fabric name')}.topo"] = topo_file(plan, sm)
    return files


__all__ = ["DIR", "render", "targets"]
