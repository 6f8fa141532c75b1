# Shared by the CLI test scripts (sourced): run refeval as a user would and count the results.
# The caller sets `refeval` (the binary) and `work` (a scratch folder) first.
passed=0
failed=0

# expect CODE STDOUT_PATTERN STDERR_PATTERN -- ARGS...: refeval ARGS exits with CODE; a non-empty
# STDOUT_PATTERN must match stdout; a non-empty STDERR_PATTERN must match stderr, which must then
# be exactly one line (CLI.md: every error is one line).
expect() {
  local code=$1 out_pattern=$2 err_pattern=$3
  shift 4
  "$refeval" "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [[ $got -eq $code ]] && { [[ -z $out_pattern ]] || grep -qE -- "$out_pattern" "$work/out"; } &&
     { [[ -z $err_pattern ]] || { [[ $(wc -l <"$work/err") -eq 1 ]] && grep -qE -- "$err_pattern" "$work/err"; }; }; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: refeval $* -> exit $got (want $code); stdout, stderr:"
    sed 's/^/    /' "$work/out" "$work/err" | head -20
  fi
}

# check DESCRIPTION COMMAND...: any shell condition, counted like an expectation.
check() {
  local what=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $what"; fi
}

# The closing line; the script's exit status.
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
