"""The rite's pieces/ files, installed with the package as yuexuan.data.pieces (see yuexuan/data)."""
