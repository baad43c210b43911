"""Pulumi component resources for cloud GPU clusters (AWS, GCP, Azure), built from a CloudSpec."""
