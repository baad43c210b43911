"""Analytic time and bandwidth of NCCL collectives (nccl-tests conventions).

Pure functions, no IO and no dependency on a cluster plan.

Conventions (NVIDIA/nccl-tests ``doc/PERFORMANCE.md`` and ``src/*.cu`` ``*GetBw``):

* ``S`` is the total message size in bytes as nccl-tests reports it (for
  AllGather the full gathered buffer, for ReduceScatter the full input).
* ``algbw = S / t``.
* ``busbw = algbw * factor`` with factor ``2(n-1)/n`` for AllReduce,
  ``(n-1)/n`` for AllGather, ReduceScatter and AllToAll, and ``1`` for
  SendRecv.  With a perfect ring busbw equals the bottleneck link bandwidth
  ("busbw should reflect the speed of the hardware bottleneck").
* GB means 1e9 bytes, as in nccl-tests.

Ring model (alpha-beta)::

    t = steps * latency + S * factor / B

``B`` is the bottleneck per-GPU bandwidth in bytes/s; ``steps`` is the number
of sequential ring steps: ``2(n-1)`` for AllReduce (reduce-scatter then
all-gather), ``n-1`` for AllGather, ReduceScatter and AllToAll, and ``1`` for
SendRecv.  With ``latency = 0`` this is exactly the ideal ring time of
nccl-tests, e.g. ``t = (S/B) * 2(n-1)/n`` for AllReduce.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_REDUCE = "all_reduce"
ALL_GATHER = "all_gather"
REDUCE_SCATTER = "reduce_scatter"
ALL_TO_ALL = "all_to_all"
SEND_RECV = "send_recv"

OPS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, SEND_RECV)
HIERARCHICAL_OPS = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER)

GB = 1e9


@dataclass(frozen=True)
class Link:
    """A per-GPU link: bandwidth in GB/s (1e9 bytes/s) and per-step latency in µs."""

    bandwidth_gb_per_s: float
    latency_us: float = 0.0

    def __post_init__(self) -> None:
        if not self.bandwidth_gb_per_s > 0:
            raise ValueError(
                f"link bandwidth must be > 0 GB/s, got {self.bandwidth_gb_per_s!r}"
            )
        if not self.latency_us >= 0:
            raise ValueError(f"link latency must be >= 0 us, got {self.latency_us!r}")

    @property
    def bytes_per_s(self) -> float:
        return self.bandwidth_gb_per_s * GB

    @property
    def latency_s(self) -> float:
        return self.latency_us * 1e-6


@dataclass(frozen=True)
class CollectiveEstimate:
    """Estimated time of one collective and the nccl-tests bandwidth figures.

    When ``time_s`` is 0 (a single rank, or an empty message) nothing crosses
    a link and both bandwidths are reported as 0.0.
    """

    op: str
    size_bytes: int
    ranks: int
    time_s: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float


def _check_op(op: str, allowed: tuple[str, ...] = OPS) -> None:
    if op not in allowed:
        raise ValueError(
            f"unknown collective {op!r}; expected one of {', '.join(allowed)}"
        )


def _check_ranks(ranks: int, what: str = "ranks") -> None:
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {ranks!r}")


def _check_size(size_bytes: float) -> None:
    if (
        isinstance(size_bytes, bool)
        or not isinstance(size_bytes, (int, float))
        or not size_bytes >= 0
    ):
        raise ValueError(f"size must be >= 0 bytes, got {size_bytes!r}")


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests bus-bandwidth factor: busbw = algbw * factor."""
    _check_op(op)
    _check_ranks(ranks)
    n = ranks
    if op == ALL_REDUCE:
        return 2 * (n - 1) / n
    if op == SEND_RECV:
        return 1.0
    return (n - 1) / n


def ring_steps(op: str, ranks: int) -> int:
    """Sequential latency-bound steps of the ring algorithm (0 for one rank)."""
    _check_op(op)
    _check_ranks(ranks)
    if ranks == 1:
        return 0
    if op == ALL_REDUCE:
        return 2 * (ranks - 1)
    if op == SEND_RECV:
        return 1
    return ranks - 1


def estimate_from_time(
    op: str, size_bytes: float, ranks: int, time_s: float
) -> CollectiveEstimate:
    """The nccl-tests bandwidths of a collective that took ``time_s``."""
    if time_s > 0:
        algbw = size_bytes / time_s / GB
        busbw = algbw * busbw_factor(op, ranks)
    else:
        algbw = busbw = 0.0
    return CollectiveEstimate(op, size_bytes, ranks, time_s, algbw, busbw)


def ring_time(op: str, size_bytes: float, ranks: int, link: Link) -> float:
    """Alpha-beta ring time ``steps * latency + S * factor / B`` in seconds.

    One rank moves nothing (time 0).  An empty message costs only latency.
    """
    _check_op(op)
    _check_ranks(ranks)
    _check_size(size_bytes)
    if ranks == 1:
        return 0.0
    return (
        ring_steps(op, ranks) * link.latency_s
        + size_bytes * busbw_factor(op, ranks) / link.bytes_per_s
    )


def ring(op: str, size_bytes: float, ranks: int, link: Link) -> CollectiveEstimate:
    """Flat ring estimate over ``link`` (the bottleneck per-GPU link)."""
    return estimate_from_time(op, size_bytes, ranks, ring_time(op, size_bytes, ranks, link))


def hierarchical_time(op: str, size_bytes: float, ranks: int, gpus_per_domain: int, nvlink: Link,
                      network: Link) -> float:
    """Two-level time for a group spanning ``k = ranks / g`` NVLink domains of ``g`` GPUs.

    Derivation (the standard hierarchical decomposition NCCL uses across
    nodes; each phase is the alpha-beta ring model above):

    AllReduce of ``S`` bytes:

    1. ReduceScatter inside each domain over NVLink: ``g-1`` steps,
       ``S(g-1)/g`` bytes per GPU.  Each GPU now owns a reduced ``S/g`` shard.
    2. AllReduce of that ``S/g`` shard across the ``k`` domains (one ring per
       local GPU index, i.e. one per rail) over the per-GPU network
       bandwidth: ``2(k-1)`` steps, ``2(k-1)/k * S/g`` bytes per GPU.
    3. AllGather inside each domain over NVLink: as phase 1.

    ``t = 2(g-1) a_nv + 2(g-1)/g * S/B_nv + 2(k-1) a_net + 2(k-1)/(k g) * S/B_net``

    AllGather of a total ``S`` bytes: AllGather across domains of the
    ``S/g`` slice (``k-1`` steps, ``(k-1)/k * S/g`` bytes over the network),
    then AllGather inside the domain (``g-1`` steps, ``(g-1)/g * S`` bytes
    over NVLink).  ReduceScatter is the mirror image with the same cost:

    ``t = (g-1) a_nv + (g-1)/g * S/B_nv + (k-1) a_net + (k-1)/(k g) * S/B_net``

    With ``k = 1`` this reduces to the flat ring over NVLink; with ``g = 1``
    to the flat ring over the network.
    """
    _check_op(op, HIERARCHICAL_OPS)
    _check_ranks(ranks)
    _check_ranks(gpus_per_domain, "gpus_per_domain")
    _check_size(size_bytes)
    if ranks % gpus_per_domain:
        raise ValueError(
            f"ranks ({ranks}) must be a multiple of gpus_per_domain ({gpus_per_domain})"
        )
    g = gpus_per_domain
    k = ranks // g
    passes = 2 if op == ALL_REDUCE else 1  # AllReduce = RS + AG at each level
    t = 0.0
    if g > 1:
        t += passes * (
            (g - 1) * nvlink.latency_s + (g - 1) / g * size_bytes / nvlink.bytes_per_s
        )
    if k > 1:
        t += passes * (
            (k - 1) * network.latency_s
            + (k - 1) / k * (size_bytes / g) / network.bytes_per_s
        )
    return t


def hierarchical(op: str, size_bytes: float, ranks: int, gpus_per_domain: int, nvlink: Link,
                 network: Link) -> CollectiveEstimate:
    """Hierarchical estimate; busbw uses the nccl-tests factor for all ``ranks``."""
    t = hierarchical_time(op, size_bytes, ranks, gpus_per_domain, nvlink, network)
    return estimate_from_time(op, size_bytes, ranks, t)
