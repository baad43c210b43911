"""Programs that run on the cluster's instances, not in clusterctl: the first-boot bootstrap and Slurm's
power-saving resume/suspend program.

Every module here uses the Python standard library only (plus PyYAML where noted: a dependency of
ansible-core, so present on every node once Ansible is), because a fresh instance has nothing else. The
render copies them verbatim into ``cloud/bin/`` and the user data carries the bootstrap program, so a node
runs exactly the code these modules' tests run.
"""
