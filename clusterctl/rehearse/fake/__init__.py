"""Stand-ins for what a rehearsal cannot reach: :mod:`.cloud`, the provider APIs (``aws``, ``gcloud``,
``az``), a standard-library program installed on a node as the provider's CLI; :mod:`.redfish`, the hosts'
BMCs (sushy-tools' Redfish emulator, one :mod:`.redfish_bmc` process per BMC address on this machine).
"""
