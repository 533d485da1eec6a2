// AdvertisingData: design note to come.
