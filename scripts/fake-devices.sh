#!/usr/bin/env bash
# Builds acceval's device emulators (emulators/, docs/emulators.md) and lays them out as the
# vendors install the real ones, then prints the `export` lines that point acceval at them:
#
#   DIR/Ascend/ascend-toolkit/latest/lib64/libascendcl.so   CANN's ACL (ASCEND_HOME_PATH)
#   DIR/Ascend/ascend-toolkit/latest/bin/atc                 the ONNX -> .om compiler
#   DIR/Ascend/ascend-toolkit/latest/ascend_toolkit_install.info
#   DIR/Ascend/driver/lib64/driver/libdcmi.so                the NPU driver's DCMI (LD_LIBRARY_PATH)
#   DIR/nvidia/libnvidia-ml.so.1                             NVIDIA's NVML (LD_LIBRARY_PATH)
#   DIR/bin/npu-smi                                          (PATH)
#
# acceval loads them exactly as it loads the real ones (by ASCEND_HOME_PATH, the loader's
# search path and PATH); every output it writes about them says "EMULATED", and grade never
# certifies them. They prove acceval's code, never the hardware.
#
# Usage: eval "$(scripts/fake-devices.sh [DIR])"     DIR defaults to target/fake-devices
# Environment: PROFILE=debug|release (which build of the emulators, default debug).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-$PWD/target/fake-devices}"
PROFILE="${PROFILE:-debug}"
case "$PROFILE" in
  debug) cargo build --quiet --examples >&2 ;;
  release) cargo build --quiet --release --examples >&2 ;;
  *) echo "PROFILE must be debug or release" >&2; exit 2 ;;
esac
# Where cargo put them: $CARGO_TARGET_DIR when set (relative to here, as cargo reads it).
EX="${CARGO_TARGET_DIR:-target}/$PROFILE/examples"
for f in libascendcl.so libdcmi.so libnvidia_ml.so atc npu-smi; do
  [ -f "$EX/$f" ] || { echo "fake-devices: $EX/$f was not built" >&2; exit 2; }
done
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
TK="$DIR/Ascend/ascend-toolkit/latest"
mkdir -p "$TK/lib64" "$TK/bin" "$DIR/Ascend/driver/lib64/driver" "$DIR/nvidia" "$DIR/bin"
# Copies, not links: a later build does not change the libraries a running test loaded.
install -m 0755 "$EX/libascendcl.so" "$TK/lib64/libascendcl.so"
install -m 0755 "$EX/atc" "$TK/bin/atc"
printf 'package_name=Ascend-cann-toolkit\nversion=8.0.RC2 (acceval emulator)\n' >"$TK/ascend_toolkit_install.info"
install -m 0755 "$EX/libdcmi.so" "$DIR/Ascend/driver/lib64/driver/libdcmi.so"
install -m 0755 "$EX/libnvidia_ml.so" "$DIR/nvidia/libnvidia-ml.so.1"
install -m 0755 "$EX/npu-smi" "$DIR/bin/npu-smi"
cat <<EOF
export ASCEND_HOME_PATH='$TK'
export LD_LIBRARY_PATH='$DIR/Ascend/driver/lib64/driver:$DIR/nvidia'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH='$DIR/bin':\$PATH
EOF
