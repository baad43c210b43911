#!/bin/bash
# Node health check installed by the clusterctl node_health role; Slurm runs it as HealthCheckProgram.
# Checks the expectations in /etc/clusterctl/node-health.conf (rendered from the cluster plan): the GPU
# count (nvidia-smi -L), ACTIVE RDMA ports at the expected rate (/sys/class/infiniband/*/ports/*) and mounts.
# Usage: node-health-check [--no-drain] [--config FILE]
# Exits 0 when healthy (and resumes the node if this check had drained it); otherwise prints every problem,
# drains the node in Slurm (unless --no-drain or NODE_HEALTH_DRAIN=0) and exits 1.
set -u

config=/etc/clusterctl/node-health.conf
drain_override=""
while [ $# -gt 0 ]; do
  case "$1" in
    --no-drain) drain_override=0 ;;
    --config) shift; config="${1:?--config needs a file}" ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "node-health-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

NODE_HEALTH_GPU_COUNT=0
NODE_HEALTH_RDMA_PORT_COUNT=0
NODE_HEALTH_RDMA_RATE_GBPS=0
NODE_HEALTH_MOUNTS=()
NODE_HEALTH_DRAIN=0
# slurmd kills HealthCheckProgram after 60 s (slurm.conf(5)), so a hung nvidia-smi must time out well before
# that, or the check is killed without draining: 20 s for nvidia-smi (+5 s to kill it), 5 s per mount, 10 s for
# scontrol
NODE_HEALTH_GPU_TIMEOUT_S=20
if [ -r "$config" ]; then
  # shellcheck source=/dev/null
  . "$config"
fi
[ -n "$drain_override" ] && NODE_HEALTH_DRAIN=$drain_override

problems=()

if [ "$NODE_HEALTH_GPU_COUNT" -gt 0 ]; then
  if ! command -v nvidia-smi > /dev/null 2>&1; then
    problems+=("nvidia-smi not found (expected $NODE_HEALTH_GPU_COUNT GPUs)")
  else
    listed=$(timeout -k 5 "$NODE_HEALTH_GPU_TIMEOUT_S" nvidia-smi -L 2> /dev/null)
    smi=$?
    if [ "$smi" -eq 124 ] || [ "$smi" -eq 137 ]; then
      problems+=("nvidia-smi did not answer within ${NODE_HEALTH_GPU_TIMEOUT_S} s (hung GPU or driver)")
    else
      gpus=$(printf '%s\n' "$listed" | grep -c '^GPU ')
      if [ "$gpus" -ne "$NODE_HEALTH_GPU_COUNT" ]; then
        problems+=("nvidia-smi lists $gpus GPUs, expected $NODE_HEALTH_GPU_COUNT")
      fi
    fi
  fi
fi

if [ "$NODE_HEALTH_RDMA_PORT_COUNT" -gt 0 ]; then
  active=0
  for port in /sys/class/infiniband/*/ports/*; do
    [ -r "$port/state" ] || continue
    grep -q ACTIVE "$port/state" || continue
    # "400 Gb/sec (4X NDR)" -> 400
    rate=$(sed -n 's/^\([0-9]*\).*/\1/p' "$port/rate" 2> /dev/null)
    if [ "${rate:-0}" -ge "$NODE_HEALTH_RDMA_RATE_GBPS" ]; then
      active=$((active + 1))
    fi
  done
  if [ "$active" -lt "$NODE_HEALTH_RDMA_PORT_COUNT" ]; then
    problems+=("$active RDMA ports ACTIVE at >= $NODE_HEALTH_RDMA_RATE_GBPS Gb/s, expected $NODE_HEALTH_RDMA_PORT_COUNT")
  fi
fi

# an array: a mount point is one word whatever it holds (no splitting, no globbing)
for mount in ${NODE_HEALTH_MOUNTS[@]+"${NODE_HEALTH_MOUNTS[@]}"}; do
  if ! timeout 5 mountpoint -q -- "$mount"; then
    problems+=("$mount is not mounted")
  fi
done

node="${SLURMD_NODENAME:-$(hostname -s)}"
if [ ${#problems[@]} -eq 0 ]; then
  # Healthy again: return the node to service when this check drained it (its reason starts with
  # "node-health:"). A node drained by an operator or by Slurm for another reason stays drained.
  if [ "$NODE_HEALTH_DRAIN" = 1 ] && command -v scontrol > /dev/null 2>&1; then
    info=$(timeout 10 scontrol show node "$node" -o 2> /dev/null || true)
    state=$(printf '%s\n' "$info" | sed -n 's/.* State=\([^ ]*\).*/\1/p')
    case "$state" in
      *DRAIN*)
        case "$info" in
          *" Reason=node-health: "*) scontrol update NodeName="$node" State=RESUME || true ;;
        esac
        ;;
    esac
  fi
  exit 0
fi
printf 'node-health-check: %s\n' "${problems[@]}" >&2
if [ "$NODE_HEALTH_DRAIN" = 1 ] && command -v scontrol > /dev/null 2>&1; then
  reason="node-health: ${problems[0]}"
  [ ${#problems[@]} -gt 1 ] && reason="$reason (+$((${#problems[@]} - 1)) more)"
  scontrol update NodeName="$node" State=DRAIN Reason="$reason" || true
fi
exit 1
