#!/bin/bash
# Node health check installed by the clusterctl node_health role; Slurm runs it as HealthCheckProgram.
# Checks the expectations in /etc/clusterctl/node-health.conf (rendered from the cluster plan): the GPU
# count (nvidia-smi -L, or -q with the NVLink fabric check), each GPU's NVLink fabric registration and clique,
# ACTIVE RDMA ports at the expected rate (/sys/class/infiniband/*/ports/*), mounts, the scratch's free space,
# Fabric Manager and IMEX running where expected, critical Xids in the kernel log since boot, DCGM health,
# pending row remaps and NVLink error counters (nvidia-smi), PCIe links of GPUs and NICs below their maximum.
# Usage: node-health-check [--no-drain] [--prolog] [--config FILE]
# --prolog: also run DCGM's quick diagnostic (dcgmi diag -r 1); the prolog piece of node_health uses it.
# Exits 0 when healthy (and resumes the node if this check had drained it); otherwise prints every problem,
# drains the node in Slurm (unless --no-drain or NODE_HEALTH_DRAIN=0) and exits 1. A check that cannot run
# here (no dcgmi, no kernel log) is named on stdout as not checked; it never passes silently.
set -u

config=/etc/clusterctl/node-health.conf
drain_override=""
prolog=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-drain) drain_override=0 ;;
    --prolog) prolog=1 ;;
    --config) shift; config="${1:?--config needs a file}" ;;
    -h | --help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "node-health-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

NODE_HEALTH_GPU_COUNT=0
NODE_HEALTH_RDMA_PORT_COUNT=0
NODE_HEALTH_RDMA_RATE_GBPS=0
NODE_HEALTH_MOUNTS=()
NODE_HEALTH_DRAIN=0
# NVSwitch baseboards (HGX/DGX 8-GPU): nvidia-fabricmanager must run, or CUDA reports no usable GPU
# (NVIDIA Fabric Manager User Guide); multi-node NVLink (GB200/GB300 NVL72): nvidia-imex must run
# (NVIDIA IMEX guide)
NODE_HEALTH_FABRIC_MANAGER=0
NODE_HEALTH_IMEX=0
# NVLink fabric registration of each GPU (nvidia-smi -q "Fabric" section: State, Status; NVIDIA Fabric Manager user
# guide, "Initializing NVSwitch and NVLink": "State : Completed", "Status : Success" once registered, Hopper and
# later), and on multi-node NVLink (NVL72) the partition: every GPU of the node in one CliqueId and ClusterUUID
# (NVML nvmlGpuFabricInfo_t: cliqueId, clusterUuid), the expected ones when the operator recorded them
NODE_HEALTH_NVLINK_FABRIC=0
NODE_HEALTH_NVLINK_CLIQUE=0
NODE_HEALTH_NVLINK_CLUSTER_UUID=""
NODE_HEALTH_NVLINK_CLIQUE_ID=""
# Xids that NVIDIA's Xid catalogue resolves with a GPU reset or node reboot (docs.nvidia.com/deploy/xid-errors):
# 48 double-bit ECC, 63/64 row remapping event/failure, 74 NVLink error, 79 fallen off the bus, 92 high
# single-bit ECC rate, 94/95 contained/uncontained ECC, 119/120 GSP RPC timeout/error. Since boot: a node
# that logged one stays drained until it is rebooted (scontrol reboot), after the reset the catalogue asks for.
NODE_HEALTH_XIDS=(48 63 64 74 79 92 94 95 119 120)
# DCGM: dcgmi health -c (and dcgmi diag -r 1 in the prolog) where dcgmi is installed (the dcgm role)
NODE_HEALTH_DCGM=1
NODE_HEALTH_DIAG_TIMEOUT_S=120
# slurmd kills HealthCheckProgram after 60 s (slurm.conf(5)), so a hung nvidia-smi must time out well before
# that, or the check is killed without draining: 10 s for nvidia-smi (+3 s to kill it), 3 s per mount, 3 s per
# service, 3 s for the kernel log, 8 s for dcgmi health, 3 s each for the row remapper and NVLink error
# queries, 10 s for scontrol, 1 s for the scratch's df (a local XFS answers at once) (every timeout adds up to < 60 s)
NODE_HEALTH_GPU_TIMEOUT_S=10
# the node-local scratch: its mount ("" = none), whether local_scratch mounted a file system there, the least free
# space in percent (0 = not checked)
NODE_HEALTH_SCRATCH_MOUNT=""
NODE_HEALTH_SCRATCH_MOUNTED=0
NODE_HEALTH_SCRATCH_MIN_FREE_PERCENT=0
# Row remapping (A100 and later, NVIDIA "GPU Memory Error Management", Row Remapping): "Pending: Yes" in
# nvidia-smi -q -d ROW_REMAPPER means a remap waits for a GPU reset; "Remapping Failure Occurred: Yes" means
# the GPU ran out of spare rows (RMA). Both drain.
NODE_HEALTH_ROW_REMAP=1
# NVLink error counters of nvidia-smi nvlink -e (since the driver loaded; DCGM fields
# DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL and DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL count the
# same): any recovery (the link retrained) drains; CRC errors above the limit drain. Replay errors are
# retransmissions that succeeded: left to the alert rules.
NODE_HEALTH_NVLINK_ERRORS=1
NODE_HEALTH_NVLINK_CRC_LIMIT=100
# PCIe links of the GPUs (vendor 0x10de, display class 0x03) and NICs (vendor 0x15b3, network class 0x02):
# current_link_width below max_link_width (a card trained at x8 in an x16 slot: half its bandwidth) drains;
# for NICs also current_link_speed below max_link_speed. A GPU lowers its link speed when idle (NVIDIA
# nvidia-smi(1): "PCIe Generation ... Current" may be lower than Max to save power), so a GPU's speed is not
# compared. Kernel ABI: Documentation/ABI/testing/sysfs-bus-pci (current_link_width, max_link_width).
NODE_HEALTH_PCIE=1
NODE_HEALTH_PCI_DEVICES=/sys/bus/pci/devices
if [ -r "$config" ]; then
  # shellcheck source=/dev/null
  . "$config"
fi
[ -n "$drain_override" ] && NODE_HEALTH_DRAIN=$drain_override

problems=()

# One line per GPU of `nvidia-smi -q` output: bus id, then the Fabric section's State, Status, CliqueId and
# ClusterUUID, tab-separated (empty when the GPU has no Fabric section). Sections are indented by 4, their
# fields by 8 ("        State                             : Completed").
fabric_rows() {
  awk '
    function row() { if (bus != "") printf "%s\t%s\t%s\t%s\t%s\n", bus, f["State"], f["Status"], f["CliqueId"], f["ClusterUUID"] }
    /^GPU [0-9A-Fa-f]/ { row(); bus = $2; split("", f); fabric = 0; next }
    /^    [^ ]/ { fabric = ($0 ~ /^    Fabric[ \t]*$/); next }
    fabric && /^        [^ ]/ && index($0, ":") {
      key = substr($0, 1, index($0, ":") - 1); value = substr($0, index($0, ":") + 1)
      gsub(/^[ \t]+|[ \t]+$/, "", key); gsub(/^[ \t]+|[ \t]+$/, "", value); f[key] = value
    }
    END { row() }'
}

# The NVLink fabric of each GPU: registered (Completed, Success) and, on multi-node NVLink, one partition for the
# whole node (the rack's, when the expected ClusterUUID / CliqueId are configured).
check_nvlink_fabric() {
  local bus state status clique cluster partitions=""
  while IFS=$'\t' read -r bus state status clique cluster; do
    [ -n "$bus" ] || continue
    if [ -z "$state" ]; then
      echo "node-health-check: not checked: NVLink fabric of GPU $bus (no Fabric section in nvidia-smi -q)"
      continue
    fi
    if [ "$state" != Completed ] || [ "$status" != Success ]; then
      problems+=("GPU $bus NVLink fabric State $state, Status ${status:-none} (expected Completed, Success)")
      continue
    fi
    [ "$NODE_HEALTH_NVLINK_CLIQUE" = 1 ] || continue
    if [ -z "$clique" ] || [ "$clique" = N/A ] || [ -z "$cluster" ] || [ "$cluster" = N/A ]; then
      problems+=("GPU $bus in no NVLink partition (CliqueId ${clique:-none}, ClusterUUID ${cluster:-none})")
    elif [ -n "$NODE_HEALTH_NVLINK_CLUSTER_UUID" ] && [ "$cluster" != "$NODE_HEALTH_NVLINK_CLUSTER_UUID" ]; then
      problems+=("GPU $bus in NVLink cluster $cluster, expected the rack's $NODE_HEALTH_NVLINK_CLUSTER_UUID")
    elif [ -n "$NODE_HEALTH_NVLINK_CLIQUE_ID" ] && [ "$clique" != "$NODE_HEALTH_NVLINK_CLIQUE_ID" ]; then
      problems+=("GPU $bus in NVLink clique $clique, expected the rack's $NODE_HEALTH_NVLINK_CLIQUE_ID")
    else
      partitions+="$clique/$cluster"$'\n'
    fi
  done < <(printf '%s\n' "$1" | fabric_rows)
  partitions=$(printf '%s' "$partitions" | sort -u)
  if [ "$(printf '%s\n' "$partitions" | grep -c .)" -gt 1 ]; then
    problems+=("GPUs in different NVLink partitions (CliqueId/ClusterUUID: $(printf '%s' "$partitions" | tr '\n' ' '))")
  fi
}

if [ "$NODE_HEALTH_GPU_COUNT" -gt 0 ]; then
  if ! command -v nvidia-smi > /dev/null 2>&1; then
    problems+=("nvidia-smi not found (expected $NODE_HEALTH_GPU_COUNT GPUs)")
  else
    # With the NVLink fabric check one `nvidia-smi -q` serves both: its GPU sections start "GPU <bus id>" as the
    # lines of -L start "GPU <n>:" (a second call would not fit slurmd's 60 s budget below).
    query=-L
    [ "$NODE_HEALTH_NVLINK_FABRIC" = 1 ] && query=-q
    listed=$(timeout -k 3 "$NODE_HEALTH_GPU_TIMEOUT_S" nvidia-smi "$query" 2> /dev/null)
    smi=$?
    if [ "$smi" -eq 124 ] || [ "$smi" -eq 137 ]; then
      problems+=("nvidia-smi did not answer within ${NODE_HEALTH_GPU_TIMEOUT_S} s (hung GPU or driver)")
    else
      gpus=$(printf '%s\n' "$listed" | grep -c '^GPU ')
      if [ "$gpus" -ne "$NODE_HEALTH_GPU_COUNT" ]; then
        problems+=("nvidia-smi lists $gpus GPUs, expected $NODE_HEALTH_GPU_COUNT")
      fi
      [ "$NODE_HEALTH_NVLINK_FABRIC" = 1 ] && check_nvlink_fabric "$listed"
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
  if ! timeout 3 mountpoint -q -- "$mount"; then
    problems+=("$mount is not mounted")
  fi
done

# The node-local scratch (storage tier min_free_percent): mounted where local_scratch assembled it, and enough free
# space that jobs' /tmp, container imports and checkpoint copies do not fail with ENOSPC. One df -P -k (POSIX
# output, 1024-byte blocks: "<fs> <size> <used> <available> <capacity> <mounted on>", df(1)) answers both: the
# file system holding the path is mounted on the path itself, or the scratch is not mounted.
if [ -n "$NODE_HEALTH_SCRATCH_MOUNT" ]; then
  read -r size avail on < <(timeout 1 df -P -k -- "$NODE_HEALTH_SCRATCH_MOUNT" 2> /dev/null | awk 'NR == 2 { print $2, $4, $6 }')
  if [ -z "${size:-}" ] || [ "$size" -eq 0 ]; then
    problems+=("scratch $NODE_HEALTH_SCRATCH_MOUNT: df gives no size")
  elif [ "$NODE_HEALTH_SCRATCH_MOUNTED" = 1 ] && [ "$on" != "$NODE_HEALTH_SCRATCH_MOUNT" ]; then
    problems+=("scratch $NODE_HEALTH_SCRATCH_MOUNT is not mounted")
  elif [ $((avail * 100)) -lt $((size * NODE_HEALTH_SCRATCH_MIN_FREE_PERCENT)) ]; then
    problems+=("scratch $NODE_HEALTH_SCRATCH_MOUNT has $((avail * 100 / size)) % free, less than $NODE_HEALTH_SCRATCH_MIN_FREE_PERCENT %")
  fi
fi

# a daemon is running: systemd's view where systemd runs, else its process (nodes without systemd)
running() {
  if [ -d /run/systemd/system ] && command -v systemctl > /dev/null 2>&1; then
    timeout 3 systemctl is-active --quiet "$1"
  else
    # the kernel keeps 15 characters of a process name (comm): nv-fabricmanager is nv-fabricmanage there
    timeout 3 pgrep -x "${2:0:15}" > /dev/null
  fi
}
if [ "$NODE_HEALTH_FABRIC_MANAGER" = 1 ] && ! running nvidia-fabricmanager nv-fabricmanager; then
  problems+=("nvidia-fabricmanager is not running (NVSwitch system)")
fi
if [ "$NODE_HEALTH_IMEX" = 1 ] && ! running nvidia-imex nvidia-imex; then
  problems+=("nvidia-imex is not running (multi-node NVLink domain)")
fi

if [ "$NODE_HEALTH_GPU_COUNT" -gt 0 ]; then
  # "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus." -> "79 PCI:0000:18:00"
  if command -v journalctl > /dev/null 2>&1 && [ -d /run/systemd/system ]; then
    klog=$(timeout 3 journalctl -k -b -q --no-pager -g 'NVRM: Xid' 2> /dev/null)
    kread=$?
    [ "$kread" -eq 1 ] && kread=0  # no match
  else
    klog=$(timeout 3 dmesg 2> /dev/null)
    kread=$?
  fi
  if [ "$kread" -ne 0 ]; then
    echo "node-health-check: not checked: Xids (kernel log not readable)"
  else
    seen=$(printf '%s\n' "$klog" | sed -n 's/.*NVRM: Xid (\([^)]*\)): \([0-9][0-9]*\),.*/\2 \1/p' | sort -u)
    for xid in ${NODE_HEALTH_XIDS[@]+"${NODE_HEALTH_XIDS[@]}"}; do
      where=$(printf '%s\n' "$seen" | sed -n "s/^$xid \(.*\)/\1/p" | tr '\n' ' ')
      [ -n "$where" ] && problems+=("Xid $xid since boot on ${where% } (NVIDIA Xid catalogue: reset the GPU or reboot)")
    done
  fi
  if [ "$NODE_HEALTH_DCGM" = 1 ]; then
    if ! command -v dcgmi > /dev/null 2>&1; then
      echo "node-health-check: not checked: DCGM health (dcgmi not installed)"
    else
      # watch every subsystem of the default group (all GPUs), then read the verdict; Warning is left to
      # dcgm-exporter's alerts, Failure drains
      health=$(timeout 4 dcgmi health -s a > /dev/null 2>&1; timeout 4 dcgmi health -c 2>&1)
      hrc=$?
      if [ "$hrc" -eq 124 ]; then
        problems+=("dcgmi health -c did not answer (nv-hostengine)")
      elif printf '%s\n' "$health" | grep -q 'Overall Health.*Failure'; then
        problems+=("dcgmi health -c reports Failure")
      fi
    fi
    if [ "$prolog" = 1 ]; then
      if ! command -v dcgmi > /dev/null 2>&1; then
        echo "node-health-check: not checked: dcgmi diag -r 1 (dcgmi not installed)"
      else
        diag=$(timeout -k 5 "$NODE_HEALTH_DIAG_TIMEOUT_S" dcgmi diag -r 1 2>&1)
        drc=$?
        if [ "$drc" -eq 124 ] || [ "$drc" -eq 137 ]; then
          problems+=("dcgmi diag -r 1 did not finish within ${NODE_HEALTH_DIAG_TIMEOUT_S} s")
        elif [ "$drc" -ne 0 ] || printf '%s\n' "$diag" | grep -q '| *Fail'; then
          problems+=("dcgmi diag -r 1 failed: $(printf '%s\n' "$diag" | grep -m1 -i 'fail' | tr -s ' |' ' ')")
        fi
      fi
    fi
  fi
else
  echo "node-health-check: not checked: Xids, DCGM (no GPUs expected on this node)"
fi

# Row remapper: one "GPU <bus id>" line per GPU, then "Pending : Yes|No" and "Remapping Failure Occurred :
# Yes|No" in its "Remapped Rows" section -> "<bus id> pending|failure" for every Yes.
row_remap_rows() {
  awk '/^GPU [0-9A-Fa-f]/ { bus = $2; next }
       /^ +Pending *: *Yes/ { print bus " pending" }
       /^ +Remapping Failure Occurred *: *Yes/ { print bus " failure" }'
}

# NVLink errors: "GPU <n>: <name> (UUID: ...)" then "Link <l>: <Kind> Errors: <count>" ->
# "<gpu> <link> <kind> <count>" for every recovery error and every CRC count above the limit.
nvlink_error_rows() {
  awk -v crc_limit="$1" '
    /^GPU [0-9]+:/ { gpu = $2; sub(/:$/, "", gpu); next }
    /Link [0-9]+: .* Errors: [0-9]+/ {
      line = $0; sub(/^[ \t]*Link /, "", line); link = line; sub(/:.*/, "", link)
      kind = line; sub(/^[0-9]+: /, "", kind); sub(/ Errors:.*/, "", kind)
      count = line; sub(/.*Errors: /, "", count); count += 0
      if ((kind == "Recovery" && count > 0) || (kind == "CRC" && count > crc_limit)) print gpu, link, kind, count
    }'
}

# PCIe: every GPU and NIC function whose link trained below its maximum, "<address> x<cur>/x<max>" or
# "<address> <cur> GT/s/<max> GT/s" (speed for NICs only).
pcie_rows() {
  local dev vendor class kind cur max scur smax
  for dev in "$1"/*; do
    [ -r "$dev/max_link_width" ] || continue
    vendor=$(cat "$dev/vendor" 2> /dev/null); class=$(cat "$dev/class" 2> /dev/null)
    case "$vendor:$class" in
      0x10de:0x03*) kind=GPU ;;
      0x15b3:0x02*) kind=NIC ;;
      *) continue ;;
    esac
    cur=$(cat "$dev/current_link_width" 2> /dev/null); max=$(cat "$dev/max_link_width" 2> /dev/null)
    if [ -n "$max" ] && [ "${cur:-0}" -lt "$max" ] 2> /dev/null; then
      echo "$kind ${dev##*/} width x${cur:-0} of x$max"
    fi
    [ "$kind" = NIC ] || continue
    scur=$(sed -n 's/^\([0-9.]*\) GT\/s.*/\1/p' "$dev/current_link_speed" 2> /dev/null)
    smax=$(sed -n 's/^\([0-9.]*\) GT\/s.*/\1/p' "$dev/max_link_speed" 2> /dev/null)
    if [ -n "$smax" ] && [ -n "$scur" ] && awk -v c="$scur" -v m="$smax" 'BEGIN { exit !(c < m) }'; then
      echo "$kind ${dev##*/} speed $scur GT/s of $smax GT/s"
    fi
  done
}

if [ "$NODE_HEALTH_GPU_COUNT" -gt 0 ] && command -v nvidia-smi > /dev/null 2>&1; then
  if [ "$NODE_HEALTH_ROW_REMAP" = 1 ]; then
    if remap=$(timeout 3 nvidia-smi -q -d ROW_REMAPPER 2> /dev/null); then
      while read -r bus what; do
        [ -n "$bus" ] || continue
        if [ "$what" = pending ]; then
          problems+=("GPU $bus row remap pending (reset the GPU; nvidia-smi -q -d ROW_REMAPPER)")
        else
          problems+=("GPU $bus row remapping failure (no spare rows left: replace the GPU)")
        fi
      done < <(printf '%s\n' "$remap" | row_remap_rows)
    else
      echo "node-health-check: not checked: row remapping (nvidia-smi -q -d ROW_REMAPPER failed)"
    fi
  fi
  if [ "$NODE_HEALTH_NVLINK_ERRORS" = 1 ]; then
    if links=$(timeout 3 nvidia-smi nvlink -e 2> /dev/null); then
      while read -r gpu link kind count; do
        [ -n "$gpu" ] || continue
        problems+=("GPU $gpu NVLink $link: $count $kind errors (nvidia-smi nvlink -e)")
      done < <(printf '%s\n' "$links" | nvlink_error_rows "$NODE_HEALTH_NVLINK_CRC_LIMIT")
    else
      echo "node-health-check: not checked: NVLink errors (nvidia-smi nvlink -e failed)"
    fi
  fi
fi
if [ "$NODE_HEALTH_PCIE" = 1 ]; then
  while read -r kind address what; do
    [ -n "$kind" ] || continue
    problems+=("$kind $address PCIe link $what (reseat or replace; lspci -vv LnkSta)")
  done < <(pcie_rows "$NODE_HEALTH_PCI_DEVICES")
fi

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
if [ "$prolog" = 1 ] && [ "$NODE_HEALTH_DRAIN" != 1 ]; then
  # report only (node_health_drain: false): a failing prolog would drain the node and hold the job
  echo "node-health-check: prolog reports only (NODE_HEALTH_DRAIN=0): the job runs" >&2
  exit 0
fi
if [ "$NODE_HEALTH_DRAIN" = 1 ] && command -v scontrol > /dev/null 2>&1; then
  reason="node-health: ${problems[0]}"
  [ "$prolog" = 1 ] && reason="node-health: prolog${SLURM_JOB_ID:+ of job $SLURM_JOB_ID}: ${problems[0]}"
  [ ${#problems[@]} -gt 1 ] && reason="$reason (+$((${#problems[@]} - 1)) more)"
  scontrol update NodeName="$node" State=DRAIN Reason="$reason" || true
fi
exit 1
