// OpenCoreBluetooth: design note to come (issue 5).
