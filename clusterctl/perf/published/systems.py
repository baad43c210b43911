"""Accelerators and interconnects of the systems the published rows ran on (shared by the row modules)."""

from __future__ import annotations

from clusterctl.perf.interconnect import Interconnect
from clusterctl.perf.job import Accelerator

# A100 SXM 80 GB: 312 TF BF16 peak, 271.2 TF MAMF (stas00/ml-engineering MAMF table), 2.039 TB/s HBM
A100 = Accelerator("a100-sxm-80gb", 312, 271.2, "", 80, 2.039)
# H100 SXM: 989 TF BF16 peak, 794.5 TF BF16 / 1,402.6 TF FP8 MAMF (same table), 3.35 TB/s HBM3
H100 = Accelerator("h100-sxm", 989, 794.5, "", 80, 3.35, fp8_mamf_tflops=1402.6, fp8_peak_tflops=1979)
# Selene (Narayanan et al. 2021 section 5): DGX A100, NVLink3 (300 GB/s each way), 8 x 200 Gb/s HDR per node
SELENE = Interconnect(8, 300, False, 8, 25, generation="ampere")
# DGX H100: 8 GPUs per NVLink4 domain (450 GB/s each way), NVLS, 8 x 400 Gb/s NICs per node
DGX_H100 = Interconnect(8, 450, True, 8, 50)
# B200 SXM (DGX B200, 1,000 W): 2,250 TF BF16 / 4,500 TF FP8 dense peak, 1,745.0 TF BF16 / 3,432.5 TF FP8 MAMF
# (stas00/ml-engineering MAMF table), 180 GB HBM3e at 8 TB/s: clusterctl/catalog/accelerators.yaml ``b200``
B200 = Accelerator("b200", 2250, 1745.0, "", 180, 8.0, fp8_mamf_tflops=3432.5, fp8_peak_tflops=4500)
# GB200 (NVL72, 1,200 W): 2,500 / 5,000 TF dense peak, 1,822.0 / 3,615.6 TF MAMF, 186 GB at 8 TB/s (catalog ``gb200``)
GB200 = Accelerator("gb200", 2500, 1822.0, "", 186, 8.0, fp8_mamf_tflops=3615.6, fp8_peak_tflops=5000)
# DGX B200: 8 GPUs per NVLink5 domain (1.8 TB/s = 900 GB/s each way), NVLS, 8 x 400 Gb/s ConnectX-7 per node
DGX_B200 = Interconnect(8, 900, True, 8, 50, generation="blackwell")
# GB200 NVL72: one 72-GPU NVLink5 domain per rack (900 GB/s each way), NVLS; 4 x ConnectX-7 400G per 4-GPU
# compute tray (DGX GB200 User Guide, catalog servers.yaml gb200-nvl72-tray) = 72 NICs per domain
GB200_NVL72 = Interconnect(72, 900, True, 72, 50, generation="blackwell")
