"""The payloads of the meaning sweep (issue 24), by class: what a hostile blueprint author writes into a string
field to make a *well-formed* value mean something the reviewer did not see.

A class is a meaning, not a syntax: ``ip-names`` are host names every resolver reads as an address, ``paths``
are directories root owns, ``world-ranges`` are address ranges that mean "anyone". Most payloads are fixed
strings; two depend on the blueprint they go into and are made per case by :mod:`tests.security.sweep`:

- ``case-collision``: the name of another entity of the same namespace, in another case (``HEAD01`` where
  ``head01`` exists), and
- ``planned-address``: the in-band address of the blueprint's first compute host, read from its rendered
  ``/etc/hosts`` (a storage server, export or database host that is really a compute node).

``reader-hiding`` characters are both put into values (here) and written raw into the YAML text, in a comment
and in a value (``tests.security.sweep.text_cases``): a reviewer's diff shows one line where PyYAML reads two.
"""

from __future__ import annotations

IP_NAMES = ("3405803781", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "::1", "::ffff:127.0.0.1")
"""host names that getaddrinfo reads as an address (203.0.113.5 and 127.0.0.1 spelled as one number, in hex,
in octal, shortened; IPv6 loopback, IPv4-mapped)"""

RESERVED_NAMES = ("localhost", "LOCALHOST", "localhost.localdomain", "ip6-localhost", "ip6-loopback",
                  "ALL", "all", "DEFAULT", "default", "ungrouped")
"""names the resolver (/etc/hosts), Slurm (ALL, DEFAULT) or Ansible (all, ungrouped) already give a meaning"""

PRIVILEGED_PATHS = ("/", "/etc", "/etc/cron.d", "/usr/local/sbin", "/root/.ssh", "/var/spool", "/var/run",
                    "/run/munge", "/lib/systemd/system", "/etc/systemd/system/slurmd.service.d", "/tmp",
                    "/dev/shm", "/proc/sys", "/boot")
"""directories where a mount, a mode-1777 directory or a directory handed to a daemon user gives root"""

WORLD_RANGES = ("0.0.0.0/0", "0.0.0.0/1", "128.0.0.0/1", "::/0", "2000::/3", "8.8.8.0/24")
"""address ranges that mean "the internet" (or half of it) where a private range is expected"""

PLAIN_HTTP_KEYS = ("http://example.com/key.asc",)
"""a repository signing key fetched without TLS: whoever is on the path signs the packages"""

READER_HIDING = {"U+2028": "\u2028", "U+2029": "\u2029", "NEL": "\u0085", "CR": "\r", "U+202E": "\u202e",
                 "ESC": "\x1b"}
"""characters a reviewer does not see as what they are: line and paragraph separators, NEL and a lone CR end a
line for PyYAML (YAML 1.1) but not in a diff; a right-to-left override reverses what follows; ESC starts a
terminal control sequence"""

LINE_BREAKERS = ("U+2028", "U+2029", "NEL", "CR")
"""the READER_HIDING characters PyYAML reads as a line break"""

SYNTAX = ("\nProlog=/tmp/x", "#", "=", "'", '"', "$(touch /tmp/pwned)", "`touch /tmp/pwned`",
          "{{ lookup('pipe','id') }}", "{% if true %}x{% endif %}", ";", "\r", " x=y")
"""the syntax payloads of tests/test_injection.py (issue 9): they must still never reach a privileged value"""

CASE_COLLISION = "case-collision"
PLANNED_ADDRESS = "planned-address"

FIXED: dict[str, tuple[str, ...]] = {
    "ip-names": IP_NAMES,
    "reserved-names": RESERVED_NAMES,
    "privileged-paths": PRIVILEGED_PATHS,
    "world-ranges": WORLD_RANGES,
    "plain-http-keys": PLAIN_HTTP_KEYS,
    "reader-hiding": tuple(READER_HIDING.values()),
    "syntax": SYNTAX,
}
"""class -> its fixed payloads"""

CLASSES = ("ip-names", "reserved-names", CASE_COLLISION, "privileged-paths", "world-ranges", PLANNED_ADDRESS,
           "plain-http-keys", "reader-hiding", "syntax")
"""every payload class, in the order the sweep's table prints them"""

NAME_LIKE = ("ip-names", "reserved-names", CASE_COLLISION, PLANNED_ADDRESS)
"""classes that are host names or addresses: also put in place of the host part of ``host:/path`` values"""
