"""The Pulumi program of a rendered project and its components per provider (AWS, GCP, Azure).

The only package of clusterctl that imports Pulumi. The components take the decisions of the stack facts
(clusterctl.cloud.stack) and map each to their provider's resources.
"""
