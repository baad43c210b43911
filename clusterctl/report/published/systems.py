"""Accelerators and interconnects of the systems the published rows ran on (shared by the row modules)."""

from __future__ import annotations

from clusterctl.report.interconnect import Interconnect
from clusterctl.report.training import Accelerator

# A100 SXM 80 GB: 312 TF BF16 peak, 271.2 TF MAMF (stas00/ml-engineering MAMF table), 2.039 TB/s HBM
A100 = Accelerator("a100-sxm-80gb", 312, 271.2, "", 80, 2.039)
# H100 SXM: 989 TF BF16 peak, 794.5 TF BF16 / 1,402.6 TF FP8 MAMF (same table), 3.35 TB/s HBM3
H100 = Accelerator("h100-sxm", 989, 794.5, "", 80, 3.35, fp8_mamf_tflops=1402.6, fp8_peak_tflops=1979)
# Selene (Narayanan et al. 2021 section 5): DGX A100, NVLink3 (300 GB/s each way), 8 x 200 Gb/s HDR per node
SELENE = Interconnect(8, 300, False, 8, 25)
# DGX H100: 8 GPUs per NVLink4 domain (450 GB/s each way), NVLS, 8 x 400 Gb/s NICs per node
DGX_H100 = Interconnect(8, 450, True, 8, 50)
