"""The shot checker: shot logs, the 释获 rules, and drum strokes heard in a recording."""
