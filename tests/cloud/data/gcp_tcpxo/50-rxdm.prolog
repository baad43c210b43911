#!/bin/bash
# Slurm prolog piece (installed by clusterctl's gcp_tcpxo role; slurm.conf Prolog=/etc/slurm/prolog.d/*, run as
# root by slurmd on each node of a job before the job runs there). GPUDirect-TCPXO on A3 Mega (a3-megagpu-8g) needs
# its receive-datapath manager (RxDM) running on every node of a job, and the NCCL TCPXO plugin that NCCL loads
# from /var/lib/tcpxo/lib64 (the nccl target's /etc/nccl-env.sh sources nccl-env-profile.sh from there).
# Source: GoogleCloudPlatform/slurm-gcp tools/prologs-epilogs/receive-data-path-manager-mega (images, mounts,
# RxDM arguments, the readiness line).
# A non-zero exit makes Slurm drain the node and requeue the job (slurm.conf(5), Prolog).
set -euo pipefail

# One-node jobs use NVLink only: no RxDM, as slurm-gcp (an unset count starts it).
if [[ "${SLURM_JOB_NUM_NODES:-0}" -eq 1 ]]; then
    exit 0
fi

rxdm_image=us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.23
plugin_image=us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17
container="receive-datapath-manager-${SLURM_JOB_ID:?SLURM_JOB_ID is not set: run by slurmd only}"

# dmabuf import helper (/dev/dmabuf_import_helper, mounted into RxDM below)
modprobe import-helper

# an RxDM left by an earlier job (its epilog failed or never ran)
docker container ls --filter "name=receive-datapath-manager-" --quiet | xargs --no-run-if-empty docker container stop >/dev/null

# Artifact Registry credentials for Docker, where the image has gcloud (Google's A3 Mega images)
if command -v gcloud >/dev/null 2>&1; then
    gcloud auth configure-docker --quiet "${rxdm_image%%/*}" >/dev/null 2>&1 || true
fi

# NCCL, the TCPXO net plugin and nccl-env-profile.sh into /var/lib/tcpxo/lib64 (the installer's fixed path)
rm -rf /var/lib/tcpxo/lib64
docker run --rm --name "nccl-installer-${SLURM_JOB_ID}" --network=host --volume /var/lib:/var/lib \
    --pull=missing "$plugin_image" install --install-nccl

# RxDM: pinned image (--pull=missing: no registry round trip per job), host network, all GPUs
docker run --detach --rm --pull=missing --name "$container" --cap-add=NET_ADMIN --network=host --privileged \
    --gpus all \
    --volume /var/lib/nvidia/lib64:/usr/local/nvidia/lib64 \
    --volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper \
    --env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \
    "$rxdm_image" --num_hops=2 --num_nics=8 --uid= --alsologtostderr >/dev/null

# ready when RxDM logs "Buffer manager initialization complete"
for ((waited = 0; waited < 120; waited += 2)); do
    if docker container logs "$container" 2>&1 | grep "Buffer manager initialization complete" >/dev/null; then
        exit 0
    fi
    sleep 2
done
echo "50-rxdm: RxDM not ready after 120 s on $(hostname -s)" >&2
docker container logs --tail 20 "$container" >&2 || true
exit 1
