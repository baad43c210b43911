"""software rules."""
