"""The node machinery of a rehearsal: what makes, reaches and removes the isolated nodes, knowing nothing of
scenarios.

:mod:`.probe` (can this machine host nodes?), :mod:`.state` (the record of every resource a rehearsal
created, written before it is created), :mod:`.lifecycle` (boot and tear down nodes: network, UTS, mount
and PID namespaces over an overlay of ``/``, each running ``sshd``), :mod:`.pid1` (each node's PID 1, a
standard-library program; or the image's systemd, :mod:`.systemd_init`), :mod:`.path` (a path inside a node's root, resolved as the node sees it),
:mod:`.command` (the one subprocess runner, with a mandatory timeout), :mod:`.ssh` (commands and files on
a node over SSH) and :mod:`.files` (atomic local writes).
"""
