"""fabric rules."""
