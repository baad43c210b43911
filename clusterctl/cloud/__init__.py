"""Cloud GPU clusters (AWS, GCP, Azure), split by job: ``stack`` (provider-neutral facts and decisions, no Pulumi),
``pulumi`` (the Pulumi program and its components per provider) and ``node`` (the programs that run on the
instances, standard library only)."""
