// BluetoothCrypto: design note to come.
