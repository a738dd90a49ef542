"""The rite's rite/ files, installed with the package as yuexuan.data.rite (see yuexuan/data)."""
