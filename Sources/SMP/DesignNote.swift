// SMP: design note to come.
