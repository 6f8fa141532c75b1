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
  gcovr
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

# The npm oracles the tests run against, so the README's test command runs every test CI runs:
# ONNX Runtime (pinned in benchmarks/ort/package.json; its install script would download GPU
# binaries, skipped), Hugging Face's tokenizers.js with the test vocabularies
# (tests/data/tokenizers/package.json), and the Unicode data the tokenizer's tables are generated
# from (scripts/unicode/package.json; a test regenerates them). Node.js from Debian when the
# machine has none.
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  echo "install-deps: installing nodejs npm"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
for dir in benchmarks/ort tests/data/tokenizers scripts/unicode; do
  if [[ ! -d $dir/node_modules ]] || [[ $dir/package.json -nt $dir/node_modules ]]; then
    echo "install-deps: npm install in $dir"
    (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error)
  fi
done
