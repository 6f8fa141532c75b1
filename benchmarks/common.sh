# Shared by the benchmark scripts (sourced; `here` is the benchmarks folder).

# onnxruntime-node into benchmarks/ort/node_modules on first use (without its GPU download step).
ensure_ort() {
  if [[ ! -d $here/ort/node_modules/onnxruntime-node ]]; then
    (cd "$here/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-save onnxruntime-node >/dev/null)
  fi
}

# median VALUES...: the middle value (the lower middle of an even count).
median() { printf "%s\n" "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# use_build [BUILD_DIR]: sets build (default ../build) and refeval, and puts the build's own
# librefeval.so first on LD_LIBRARY_PATH, also for a copied build folder (refeval's RUNPATH names
# the folder it was built in).
use_build() {
  build=${1:-$here/../build}
  refeval=$build/refeval
  export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
