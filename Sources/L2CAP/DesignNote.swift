// L2CAP: design note to come.
