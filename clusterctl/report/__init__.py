"""Performance reports: analytic estimates derived from cluster parameters."""
