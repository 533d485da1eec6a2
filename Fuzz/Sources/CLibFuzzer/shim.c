#include "CLibFuzzer.h"
