"""The rite's cues/ files, installed with the package as yuexuan.data.cues (see yuexuan/data)."""
