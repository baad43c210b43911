#!/bin/bash
# Epilog piece of the clusterctl node_health role (slurm.conf Epilog; slurmd runs it as root after a job ends,
# with SLURM_JOB_ID, SLURM_JOB_UID and SLURMD_NODENAME set). With proctrack/cgroup Slurm kills the job's own
# processes; this removes what escaped the job (processes of the user started outside it, /dev/shm files
# outside the job's private /dev/shm) when no other job of the same user runs on the node, and checks that
# no process still holds a GPU. A GPU still in use drains the node with a "node-cleanup: " reason, which the
# health check never resumes (an operator looks first). Exits 0: a failing epilog would drain with a reason
# of Slurm's ("Epilog error") instead of the one that says what is wrong.
# Usage: node-cleanup-epilog [--config FILE]
set -u
config=/etc/clusterctl/node-health.conf
[ "${1:-}" = --config ] && config="${2:?--config needs a file}"
NODE_HEALTH_GPU_COUNT=0
NODE_HEALTH_DRAIN=0
if [ -r "$config" ]; then
  # shellcheck source=/dev/null
  . "$config"
fi
job="${SLURM_JOB_ID:-}"
uid="${SLURM_JOB_UID:-}"
node="${SLURMD_NODENAME:-$(hostname -s)}"

# another job of this user runs here when a child of another job's slurmstepd ("slurmstepd: [JOB.STEP]")
# runs as the user; local state only (no RPC to slurmctld from every node of a large job)
other_job_of_user() {
  local pid args
  for pid in $(pgrep -x slurmstepd); do
    args=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2> /dev/null)
    case "$args" in *"[$job."*) continue ;; esac
    pgrep -u "$uid" -P "$pid" > /dev/null && return 0
  done
  return 1
}

if [ -z "$uid" ] || [ "$uid" -lt 1000 ]; then
  echo "node-cleanup-epilog: not cleaned: job ${job:-?} of uid ${uid:-?} (root or a system account)"
elif other_job_of_user; then
  echo "node-cleanup-epilog: not cleaned: uid $uid has another job on $node"
else
  pkill -KILL -U "$uid" 2> /dev/null
  find /dev/shm -xdev -mindepth 1 -user "$uid" -delete 2> /dev/null
  echo "node-cleanup-epilog: killed the remaining processes and removed the /dev/shm files of uid $uid"
fi

problem=""
if [ "$NODE_HEALTH_GPU_COUNT" -gt 0 ]; then
  if command -v nvidia-smi > /dev/null 2>&1; then
    sleep 1
    pids=$(timeout -k 3 15 nvidia-smi --query-compute-apps=pid --format=csv,noheader 2> /dev/null | tr -d ' ' | tr '\n' ' ')
    [ -n "${pids% }" ] && problem="GPU still in use after job $job by PID ${pids% }"
  else
    echo "node-cleanup-epilog: not checked: GPU state (nvidia-smi not installed)"
  fi
else
  echo "node-cleanup-epilog: not checked: GPU state (no GPUs expected on this node)"
fi
if [ -n "$problem" ]; then
  echo "node-cleanup-epilog: $problem" >&2
  if [ "$NODE_HEALTH_DRAIN" = 1 ] && command -v scontrol > /dev/null 2>&1; then
    timeout 10 scontrol update NodeName="$node" State=DRAIN Reason="node-cleanup: $problem" || true
  fi
fi
exit 0
