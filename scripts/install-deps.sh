#!/usr/bin/env bash
# Installs the Debian 12 packages refeval builds with. Idempotent: installs only what is missing.
set -euo pipefail
packages=(
  build-essential cmake ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libeigen3-dev libopenblas-dev libopenblas0-serial libspdlog-dev libfmt-dev
  doctest-dev libcli11-dev nlohmann-json3-dev
  libre2-dev libjpeg-dev libpng-dev libwebp-dev libtiff-dev libopenjp2-7-dev
  libedit-dev
  libpcre2-dev libutf8proc-dev
  python3 python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-onnx
  python3-pandas python3-plotly python3-nbclient python3-ipykernel
  python3-torch python3-torchvision
  chromium fonts-dejavu-core
  graphviz node-dagre-layout
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
