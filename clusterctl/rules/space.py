"""space rules."""
