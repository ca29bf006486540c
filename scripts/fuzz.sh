#!/usr/bin/env bash
# Runs the cargo-fuzz targets of tools/fuzz (the iWARP wire codecs of
# rust/wire) for a bounded time each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 20); all targets unless some are named.
# Installs cargo-fuzz if it is missing. Uses a rustup nightly toolchain when
# there is one, else the stable one with RUSTC_BOOTSTRAP=1. Each target starts
# from the seeds checked in under tools/fuzz/seeds/TARGET; the corpus it grows
# is kept in tools/fuzz/corpus/TARGET between runs (ZCNET_FUZZ_CORPUS=DIR:
# in DIR/TARGET instead; `make check` keeps it in the cache outside the
# checkout, so that it grows from one run to the next on a machine), crashes
# land in tools/fuzz/artifacts/TARGET. Prints one line per target and exits
# non-zero when any target crashed or failed to run.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
secs=${1:-20}
case $secs in '' | *[!0-9]*) die "usage: $0 [SECONDS] [TARGET...]" ;; esac
shift $(($# > 0 ? 1 : 0))
FUZZ=$ZCNET_ROOT/tools/fuzz
OUT=$ZCNET_ROOT/out/fuzz
mkdir -p "$OUT"
export PATH="$HOME/.cargo/bin:$PATH"

if ! cargo fuzz --version >/dev/null 2>&1; then
  log "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked >"$OUT/install.log" 2>&1 ||
    { tail -n 20 "$OUT/install.log"; die "cargo install cargo-fuzz failed"; }
fi

# The toolchain: nightly if rustup has one, else stable with RUSTC_BOOTSTRAP.
if command -v rustup >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz() { cargo +nightly fuzz "$@"; }
  chain=nightly
else
  fuzz() { RUSTC_BOOTSTRAP=1 cargo fuzz "$@"; }
  chain="stable (RUSTC_BOOTSTRAP=1)"
fi

cd "$FUZZ"
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  mapfile -t targets < <(fuzz list 2>/dev/null)
  [ ${#targets[@]} -gt 0 ] || die "no fuzz targets found (cargo fuzz list failed)"
fi
log "fuzz: ${#targets[@]} targets, ${secs} s each, $chain"
if ! fuzz build >"$OUT/build.log" 2>&1; then
  tail -n 30 "$OUT/build.log"
  die "fuzz build failed (see $OUT/build.log)"
fi

bad=0
corpus=${ZCNET_FUZZ_CORPUS:-$FUZZ/corpus}
for t in "${targets[@]}"; do
  mkdir -p "$corpus/$t" "artifacts/$t"
  log="$OUT/$t.log"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a leak.
  seeds=(); [ -d "seeds/$t" ] && seeds=("seeds/$t")
  fuzz run "$t" "$corpus/$t" "${seeds[@]}" -- -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n1)
  if [ $rc = 0 ]; then
    echo "fuzz $t: ok, ${runs:-?} runs in ${time:-$secs} s, corpus $(ls "$corpus/$t" | wc -l)"
  else
    bad=1
    art=$(grep -o 'artifacts/[^ ]*' "$log" | tail -n1)
    echo "fuzz $t: FAILED (exit $rc${art:+, input tools/fuzz/$art}; see $log)"
    grep -m5 -E 'panicked|ERROR: |SUMMARY' "$log" >&2 || tail -n 20 "$log" >&2
  fi
done
exit $bad
