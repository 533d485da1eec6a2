// HCI: design note to come.
