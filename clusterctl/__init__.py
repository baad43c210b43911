"""clusterctl: declarative cluster-as-code for AI-training GPU clusters."""

__version__ = "0.1.0"
