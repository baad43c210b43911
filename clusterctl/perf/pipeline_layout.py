"""Megatron-LM's free-form pipeline layout (``--pipeline-model-parallel-layout``): which layers each pipeline
stage and virtual stage builds, written as a string, and the checks Megatron-LM makes on it.

Read at NVIDIA/Megatron-LM commit d98e8a6 (2026-08-22), megatron/core/transformer/pipeline_parallel_layer_layout.py:

* ``parse_str_to_list`` (283-320): commas are cosmetic; ``(...)*n`` and ``x*n`` repeat; ``|`` separates
  stages; ``E`` is the embedding, ``L`` the loss, ``t`` a transformer (decoder) layer, ``m`` an MTP layer.
  ``"Et*4|(t*4|)*14tmL"`` is DeepSeek-V3's 61 layers on 16 stages as Megatron-Bridge's GB300 recipe runs them.
* ``__init__`` (41-56): the number of stages is a multiple of PP (also arguments.py:941-952); stage
  ``i = a x PP + b`` is virtual stage ``a`` of pipeline rank ``b``, so VP = stages / PP.
* ``validate_layer_layout`` (86-151): the first layer is the embedding and the last the loss, each exactly
  once; the ``t`` count equals ``num_layers`` and the ``m`` count the MTP layers; decoder layers come before
  MTP layers; MTP layers sit in one virtual stage, the last of their rank (which also keeps them off the
  first rank's earlier virtual stages).
  Stage sizes are otherwise free, empty stages included.
* transformer_config.py:2242-2259: the layout cannot be combined with the first/last stage counts or the
  ``--account-for-*`` options; 2275-2289: a given VP must equal the layout's.

Since the embedding is the first layer and the loss the last, the embedding is always on pipeline rank 0 and
the loss on the last rank; the training estimate charges the logits there as for every other split.
"""

from __future__ import annotations

import re

LAYER_CHARS = {"E": "embedding", "L": "loss", "t": "transformer layer", "m": "MTP layer"}


def parse(layout: str) -> list[str]:
    """The layout's stages in order, each a string of layer characters (``parse_str_to_list``)."""
    text = layout.replace(",", "")
    text = re.sub(r"\(([^)]+)\)\*(\d+)", _repeat, text)
    text = re.sub(r"(.)\*(\d+)", _repeat, text)
    if len(text) > MAX_EXPANDED:
        raise ValueError(f"expands to more than {MAX_EXPANDED:,} characters")
    return text.split("|")


MAX_EXPANDED = 1_000_000
"""a layout expanding past this is refused (ten thousand layers is the model's own limit)"""


def _repeat(match: re.Match) -> str:
    if len(match.group(1)) * int(match.group(2)) > MAX_EXPANDED:
        raise ValueError(f"expands to more than {MAX_EXPANDED:,} characters")
    return match.group(1) * int(match.group(2))


def problems(layout: str, pp: int, vp: int, layers: int, mtp_layers: int = 0) -> list[str]:
    """What Megatron-LM asserts on ``layout`` for a model of ``layers`` transformer and ``mtp_layers`` MTP
    layers on ``pp`` pipeline ranks of ``vp`` virtual stages each (empty: it runs)."""
    try:
        stages = parse(layout)
    except (ValueError, OverflowError, MemoryError):
        return [f"pipeline layout {layout!r} does not parse"]
    bad_chars = sorted({c for s in stages for c in s if c not in LAYER_CHARS})
    if bad_chars:
        return [f"pipeline layout {layout!r}: {', '.join(repr(c) for c in bad_chars)} is no layer (E, L, t or m)"]
    if len(stages) % pp:
        return [f"pipeline layout {layout!r}: {len(stages)} stages are not a multiple of pp {pp}"]
    if len(stages) // pp != vp:
        return [f"pipeline layout {layout!r}: {len(stages)} stages on pp {pp} are {len(stages) // pp} virtual stages "
                f"per rank, not the layout's virtual_stages {vp}"]
    flat = "".join(stages)
    out = []
    if not flat.startswith("E") or flat.count("E") != 1:
        out.append(f"pipeline layout {layout!r}: the first layer must be the embedding E, exactly once")
    if not flat.endswith("L") or flat.count("L") != 1:
        out.append(f"pipeline layout {layout!r}: the last layer must be the loss L, exactly once")
    if flat.count("t") != layers:
        out.append(f"pipeline layout {layout!r} has {flat.count('t')} transformer layers, the model {layers}")
    if flat.count("m") != mtp_layers:
        out.append(f"pipeline layout {layout!r} has {flat.count('m')} MTP layers, the model {mtp_layers}")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        out.append(f"pipeline layout {layout!r}: transformer layers must come before the MTP layers")
    with_mtp = [i for i, s in enumerate(stages) if "m" in s]
    if with_mtp and (len(with_mtp) > 1 or with_mtp[0] // pp != vp - 1):
        out.append(f"pipeline layout {layout!r}: the MTP layers must sit in one virtual stage, the last of their "
                   "rank")
    return out


def rank_layers(layout: str, pp: int) -> tuple[int, ...]:
    """Transformer layers on each pipeline rank (all its virtual stages), first rank to last."""
    stages = parse(layout)
    return tuple(sum(stages[i].count("t") for i in range(rank, len(stages), pp)) for rank in range(pp))


__all__ = ["LAYER_CHARS", "parse", "problems", "rank_layers"]
