#!/usr/bin/python3
"""clusterctl-bootstrap: first boot of a cloud instance (placeholder: the node-programs engineer writes it).

Reads /etc/clusterctl/bootstrap.json (clusterctl.cloud.userdata.bootstrap_config), fetches the cluster's
config object and this node's secrets, and applies site.yml to this host only with a local connection.
"""


def main() -> int:
    raise SystemExit("clusterctl-bootstrap: not implemented yet")


if __name__ == "__main__":
    main()
