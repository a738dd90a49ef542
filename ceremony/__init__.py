"""The rite's ceremony/ files (courtyard, suspension by rank, variants), installed with the package as yuexuan.data.ceremony (see yuexuan/data)."""
