// BluetoothLE: design note to come.
