# Sourced by scripts that take their settings from the environment (replicas.sh, fuzz.sh,
# bench/gated_vs_ar.sh):
#   defaults NAME=VALUE...   every NAME the environment leaves unset or empty gets VALUE, as
#                            NAME="${NAME:-VALUE}" would, for a whole list of settings at once.
defaults() {
  local setting name
  for setting in "$@"; do
    name="${setting%%=*}"
    [[ -n "${!name:-}" ]] || printf -v "$name" '%s' "${setting#*=}"
  done
}
