# stage NAME COMMAND...: runs the command, then prints its wall time and the script's total on stderr
# ("test: stage NAME took N s (total T s)"); a failing command ends the calling script (set -e).
stage() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "test: stage $name took $((SECONDS - t0)) s (total $SECONDS s)" >&2
}
