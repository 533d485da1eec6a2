// BluetoothDissector: design note to come.
