"""cloud rules."""
