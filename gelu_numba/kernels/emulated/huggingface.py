"""(being written)"""

ENTRIES = ()
