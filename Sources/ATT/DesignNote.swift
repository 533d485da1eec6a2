// ATT: design note to come.
