#!/bin/bash
# Runs one VM scenario inside the guest (PID 1 calls it in the chroot of the host root): sources the helpers and
# /mnt/scenarios/NAME.sh. Exit status 0 means the scenario passed.
set -uo pipefail
source /mnt/guest-lib.sh
name=$1
log "scenario $name on $(uname -r)"
source "/mnt/scenarios/$name.sh"
log "PASS $name"
