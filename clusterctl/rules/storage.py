"""storage rules."""
