# Sourced by run.sh and guards.sh, whose copies of the tree link this checkout's npm folders (ONNX
# Runtime; tokenizers.js and its vocabularies; the Unicode data the tokenizer's tables are checked
# against), so that the copies' tests run them as CI does.
npm_folders=(benchmarks/ort tests/data/tokenizers scripts/unicode)

link_npm_folders() {  # link_npm_folders REPO COPY
  local dir
  for dir in "${npm_folders[@]}"; do
    if [[ -d $1/$dir/node_modules && ! -e $2/$dir/node_modules ]]; then
      ln -s "$1/$dir/node_modules" "$2/$dir/node_modules"
    fi
  done
}
