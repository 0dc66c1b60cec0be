#!/usr/bin/env bash
# Runs a command with libtorch for the `tch` cargo feature (tch 0.26 needs libtorch 2.13.0):
#
#   scripts/with-torch.sh cargo build --release --features tch
#   scripts/with-torch.sh target/release/acceval run --backend tch --model M.pt
#
# Once, and cached in $ACCEVAL_TORCH_HOME (default ~/.cache/acceval/libtorch-2.13.0), it
# installs PyPI's torch==2.13.0 wheel without its CUDA dependency set, plus the two CUDA
# runtime wheels that even libtorch_cpu.so needs at load time (libcudart, libcupti: 13 MB),
# into a venv (about 540 MB downloaded), and lays out a "libtorch view": include/ and lib/
# with every torch library but the CUDA ones, so torch-sys links the CPU libtorch only. Then
# it sets LIBTORCH (torch-sys's build), LD_LIBRARY_PATH (the linker's search for libtorch's
# own dependencies, and the loader at run time: the rpath is not embedded) and execs the
# command. PyPI's Linux wheel is the CUDA 13 build; on a CUDA host, set TORCH_CUDA=1 to
# install the full dependency set instead and keep the CUDA libraries in the view.
# Source of the recipe: shared/notes/dependencies.md §5 (route B; route A for TORCH_CUDA=1).
set -euo pipefail
TORCH_VERSION=2.13.0
HOME_DIR="${ACCEVAL_TORCH_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/acceval/libtorch-$TORCH_VERSION}"
VENV="$HOME_DIR/venv"
VIEW="$HOME_DIR/libtorch"
PY="${PYTHON:-python3}"
[ $# -gt 0 ] || { echo "usage: scripts/with-torch.sh CMD [ARGS...]" >&2; exit 2; }

site() { "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }

if [ ! -f "$HOME_DIR/.ready" ]; then
  echo "with-torch: installing torch==$TORCH_VERSION into $VENV (once)" >&2
  rm -rf "$HOME_DIR"
  mkdir -p "$HOME_DIR"
  "$PY" -m venv "$VENV"
  if [ "${TORCH_CUDA:-0}" = 1 ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" >&2
  else
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
      "torch==$TORCH_VERSION" "nvidia-cuda-runtime==13.0.96.*" "nvidia-cuda-cupti==13.0.85.*" >&2
  fi
  T="$(site)/torch"
  mkdir -p "$VIEW/lib"
  ln -s "$T/include" "$VIEW/include"
  for f in "$T"/lib/*.so*; do
    case "$(basename "$f")" in
      libtorch_cuda*|libc10_cuda*|libtorch_nvshmem*|libcaffe2_nvrtc*)
        [ "${TORCH_CUDA:-0}" = 1 ] || continue ;;
    esac
    ln -s "$f" "$VIEW/lib/"
  done
  touch "$HOME_DIR/.ready"
fi

SITE="$(site)"
# The CUDA runtime libraries libtorch_cpu.so needs (and, with TORCH_CUDA=1, the rest).
NV="$(find "$SITE/nvidia" -type d -name lib 2>/dev/null | tr '\n' ':')"
export LIBTORCH="$VIEW"
export LIBTORCH_CXX11_ABI=1
export LD_LIBRARY_PATH="$VIEW/lib:${NV}${LD_LIBRARY_PATH:-}"
# For tests that compare with torch itself (the same torch the backend links).
export ACCEVAL_TCH_PYTHON="$VENV/bin/python"
exec "$@"
