"""nvlink rules."""
