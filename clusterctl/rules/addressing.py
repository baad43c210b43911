"""addressing rules."""
