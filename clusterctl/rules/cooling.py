"""cooling rules."""
