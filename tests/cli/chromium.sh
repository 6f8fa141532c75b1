# Headless Chromium for the HTML tests (sourced after expect.sh): `render PAGE WIDTH HEIGHT`
# writes $work/shot.png and $work/dom.html (the DOM after the page's scripts ran), offline: every
# network name is unresolvable. Exits 77 (ctest: skipped) when Chromium is not installed.
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $browser ]]; then echo "chromium not found: skipped (scripts/install-deps.sh installs it)"; exit 77; fi
render() {
  local args=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium"
              --host-resolver-rules="MAP * ~NOTFOUND" --window-size="$2,$3")
  timeout 60 "$browser" "${args[@]}" --screenshot="$work/shot.png" "file://$1" >/dev/null 2>&1
  timeout 60 "$browser" "${args[@]}" --dump-dom "file://$1" 2>/dev/null >"$work/dom.html"
}
