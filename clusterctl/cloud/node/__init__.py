"""Programs that run on the cluster's instances, not in clusterctl: the first-boot bootstrap and Slurm's
power-saving resume/suspend program.

Every module here uses the Python standard library only, because a fresh instance has nothing else
(bootstrap.py, power_save.py, cloud_config.py: the user data generator, which emits JSON-form cloud-config). The
render copies them verbatim into ``cloud/bin/`` and the user data carries the bootstrap program, so a node
runs exactly the code these modules' tests run.
"""
