"""The rehearsal's scenarios: each a small unit declaring what it needs of the blueprint and what it proves,
with the steps that prove it (:mod:`.registry` lists them in the order ``--scenario all`` runs them).
"""
