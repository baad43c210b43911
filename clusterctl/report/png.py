"""PNG twins of the report's SVG pictures, through the optional ``cairosvg`` package
(``pip install 'clusterctl[png]'``)."""

from __future__ import annotations


def svg_to_png(svg: str, scale: float = 1.0) -> bytes:
    """PNG bytes of an SVG document (needs the optional cairosvg package and the Cairo library)."""
    try:
        import cairosvg
    except ImportError as e:
        raise RuntimeError("PNG output needs cairosvg: pip install 'clusterctl[png]'") from e
    except OSError as e:  # cairocffi found no Cairo C library
        raise RuntimeError(f"PNG output needs the Cairo library (libcairo2): {e}") from e
    return cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=scale)
