"""The exit codes of the ``clusterctl`` command, all of them (docs/cli.md, "Exit codes"; tests/test_codes.py
checks that the table there lists exactly these)."""

#: the blueprint is valid (warnings and infos allowed); a command did what it was asked
EXIT_OK = 0
#: findings at or above the ``--fail-on`` severity (default: error); render --check found drift; a rehearsal
#: step failed
EXIT_FINDINGS = 1
#: the blueprint could not be read (YAML, shape, unknown catalog names) or the command was misused
EXIT_UNREADABLE = 2
#: an internal error: a bug in clusterctl (printed as one message, never a traceback)
EXIT_INTERNAL = 3
#: interrupted (Ctrl-C): 128 + SIGINT, as shells report it
EXIT_INTERRUPTED = 130
