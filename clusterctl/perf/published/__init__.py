"""Published measurements the performance model is set from (calibration) and checked against (validation).

Every row is one published figure with its source: a training run (model, layout, GPUs, measured throughput)
or a collective (nccl-tests bus bandwidth). Each row has a *role*:

* ``calibration`` - the row was used to set a constant of the model (a fit): agreement is expected and proves
  little beyond arithmetic;
* ``validation`` - the row was not used to set any constant (a holdout): agreement is evidence.

Rows belong to a *family* (same kind of hardware and measurement) whose *band* is the allowed relative error
``|model / published - 1|``: the observed spread of the family plus a stated margin, not a blanket 15 %.
A row outside 15 % carries an ``explanation``.

One module per source family; ``all_rows.rows()`` imports them explicitly (no discovery by name); ``rows.py``
holds the row and family types they share. The tables in docs/report.md are generated from here:
``python -m clusterctl.perf.published`` prints them.
"""
