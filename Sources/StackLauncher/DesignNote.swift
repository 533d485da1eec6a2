// StackLauncher: design note to come.
