"""Stack facts and decisions, provider-neutral: the cloud part of a plan as plain data (``cluster.json``), the
identity classes and capabilities of the nodes, which groups are GPU groups, storage sizing, host names, the
user data and configuration object the instances boot with, the cost, and reading a stack's outputs back.

Nothing here imports Pulumi: the Pulumi components (clusterctl.cloud.pulumi) map these decisions to each
provider's resources through per-provider tables.
"""
