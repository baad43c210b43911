"""slurm rules."""
