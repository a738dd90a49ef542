"""The shot rules, shared by the compiler, ``check`` and the live judge: the vocabulary of ranks,
roles, targets and results, the shot log's format (read and written), and the 释获 rules."""
