"""naming rules."""
