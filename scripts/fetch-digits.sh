#!/usr/bin/env bash
# Writes data/digits.csv: the 1,797 8x8 handwritten digits (64 pixel columns p0..p63 and a
# label), as shipped inside Debian's python3-sklearn package. Only the package file is
# downloaded (apt-get download) and unpacked (dpkg-deb -x) into a temporary folder, the file is
# checksum-checked; nothing is installed. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/data/digits.csv}"
if [[ -s "$OUT" ]]; then
  echo "fetch-digits: $OUT already present ($(wc -l < "$OUT") lines)"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
if ! apt-get download python3-sklearn >/dev/null 2>&1; then
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
  apt-get download python3-sklearn >/dev/null
fi
dpkg-deb -x python3-sklearn_*.deb unpacked
GZ="$(find unpacked -name digits.csv.gz | head -n1)"
[[ -n "$GZ" ]] || { echo "fetch-digits: digits.csv.gz not found in python3-sklearn" >&2; exit 1; }
# The file as Debian 12's python3-sklearn 1.2.1 ships it; another version must be checked first.
EXPECTED_SHA256="46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a"
ACTUAL_SHA256="$(sha256sum "$GZ" | cut -d' ' -f1)"
if [[ "$ACTUAL_SHA256" != "$EXPECTED_SHA256" ]]; then
  echo "fetch-digits: checksum mismatch for digits.csv.gz: got $ACTUAL_SHA256, expected $EXPECTED_SHA256" >&2
  exit 1
fi
{
  header=""
  for i in $(seq 0 63); do header+="p$i,"; done
  echo "${header}label"
  # The shipped file holds floats like 0.000000000000000000e+00; integers are what they mean.
  gunzip -c "$GZ" | awk -F, 'BEGIN{OFS=","} {for (i = 1; i <= NF; i++) $i = sprintf("%d", $i); print}'
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "fetch-digits: wrote $OUT ($(($(wc -l < "$OUT") - 1)) rows)"
