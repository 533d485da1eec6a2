import Testing  // placeholder until this module has tests
