"""The performance model: analytic figures of a training job on the planned cluster.

One concept per module, from the bottom up:

* ``collectives`` - nccl-tests conventions and the alpha-beta ring model (no cluster);
* ``interconnect`` - NVLink domain and NICs of a GPU group, NCCL-like collective times on them;
* ``job`` - the shared types: model shape, parallel layout, accelerator, and the error for a layout that
  does not fit;
* ``memory`` - per-GPU memory of a layout; ``layout_rules`` - the layouts Megatron-LM accepts;
* ``training`` - the step-time estimate; ``layout_search`` - the fastest layout that passes and fits;
* ``model_presets`` (``models.yaml``) and ``workload`` - from blueprint and command line to the model,
  layout and accelerator;
* ``storage_io`` - checkpoint size, checkpoint tier and the I/O bandwidth of each storage tier;
* ``published/`` - the published measurements the constants are calibrated on and validated against.

It imports blueprint, catalog and plan only: the rules judge with it, the report presents it.
"""
