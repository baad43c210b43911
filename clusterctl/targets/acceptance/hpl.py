"""HPL.dat of the HPL job, sized from the plan: N from the GPUs' memory, P x Q from the GPU count.

- N: the matrix (8-byte doubles) fills ``MEMORY_FRACTION`` of the GPUs' memory, rounded down to a multiple of NB.
  Netlib HPL's FAQ ("What problem size N should I run?"): "a good rule of thumb is ... about 80 % of the total
  amount of memory"; Intel's HPL guide states the same (matrix = 8 N^2 bytes, "choose a problem size that uses
  80% of the memory"). NVIDIA's HPL keeps the matrix in GPU memory, so the memory is the GPUs' HBM.
- P x Q = GPUs (one MPI rank per GPU, as NVIDIA's hpl.sh runs it), P <= Q and as square as possible (Netlib HPL
  TUNING: "P and Q ... approximately equal, with Q slightly larger than P").
- The other lines are Netlib's default HPL.dat; NVIDIA's HPL ignores the broadcast, panel factorization,
  look-ahead, L1/U layout, equilibration and alignment lines (NVIDIA HPC-Benchmarks, "NVIDIA HPL Benchmark").
"""

from __future__ import annotations

import math

MEMORY_FRACTION = 0.8
BYTES_PER_ELEMENT = 8


def problem_size(gpus: int, hbm_gb: float, block: int) -> int:
    """N: 80 % of ``gpus`` x ``hbm_gb`` (GB = 1e9 bytes) holds the N x N matrix, N a multiple of ``block``."""
    n = math.isqrt(int(MEMORY_FRACTION * gpus * hbm_gb * 1e9) // BYTES_PER_ELEMENT)
    return max(block, n // block * block)


def process_grid(ranks: int) -> tuple[int, int]:
    """(P, Q) with P x Q = ranks, P <= Q, P the largest divisor not above the square root."""
    p = next(d for d in range(math.isqrt(ranks), 0, -1) if ranks % d == 0)
    return p, ranks // p


def hpl_dat(n: int, block: int, p: int, q: int) -> str:
    """Netlib HPL's input file (HPL 2.3 ``HPL.dat`` layout), one problem size, one block size, one grid."""
    rows = [
        ("HPL.out", "output file name (if any)"), ("6", "device out (6=stdout,7=stderr,file)"),
        ("1", "# of problems sizes (N)"), (str(n), "Ns"), ("1", "# of NBs"), (str(block), "NBs"),
        ("0", "PMAP process mapping (0=Row-,1=Column-major)"), ("1", "# of process grids (P x Q)"),
        (str(p), "Ps"), (str(q), "Qs"), ("16.0", "threshold"), ("1", "# of panel fact"),
        ("2", "PFACTs (0=left, 1=Crout, 2=Right)"), ("1", "# of recursive stopping criterium"),
        ("4", "NBMINs (>= 1)"), ("1", "# of panels in recursion"), ("2", "NDIVs"),
        ("1", "# of recursive panel fact."), ("1", "RFACTs (0=left, 1=Crout, 2=Right)"), ("1", "# of broadcast"),
        ("1", "BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)"), ("1", "# of lookahead depth"), ("1", "DEPTHs (>=0)"),
        ("2", "SWAP (0=bin-exch,1=long,2=mix)"), ("64", "swapping threshold"),
        ("0", "L1 in (0=transposed,1=no-transposed) form"), ("0", "U  in (0=transposed,1=no-transposed) form"),
        ("1", "Equilibration (0=no,1=yes)"), ("8", "memory alignment in double (> 0)"),
    ]
    head = ["HPLinpack benchmark input file", "Innovative Computing Laboratory, University of Tennessee"]
    return "\n".join(head + [f"{value:<13}{what}" for value, what in rows]) + "\n"
