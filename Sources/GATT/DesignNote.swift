// GATT: design note to come (see the issue that fills this layer).
