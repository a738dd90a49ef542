"""The rite's instruments/ files, installed with the package as yuexuan.data.instruments (see yuexuan/data)."""
