#!/usr/bin/env bash
# Fetch Faultline's external data sets from their public upstream repositories, or check a copy.
#
#   scripts/fetch_data.sh [--sources DIR] [DEST]   fetch, convert, then verify
#   scripts/fetch_data.sh --verify [DEST]          only compare DEST with the checksums
#
# DEST defaults to $FAULTLINE_DATA_DIR (the data_dir setting). Upstream repositories, pinned
# commits, conversions and checksums are described in docs/data.md.
#
# --sources DIR   work offline: DIR holds one folder per upstream repository, named owner+repo
#                 (e.g. logpai+logparser). Each is a git directory or checkout that contains the
#                 pinned commit, or a plain folder with the files at that commit (an unpacked
#                 GitHub tarball). Without it, the needed files are fetched with git from
#                 $FETCH_DATA_GIT_BASE (default https://github.com): a shallow, blob-less,
#                 sparse fetch of the pinned commit, so only the files used are downloaded.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/.." && pwd -P)
doc="$repo_root/docs/data.md"
convert="$here/data_convert.py"
git_base=${FETCH_DATA_GIT_BASE:-https://github.com}

die() { echo "fetch_data: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "$0"; }

# Hosts drop out for minutes at a time, so back off for about five minutes before giving up.
retry() {
  local delay
  for delay in 10 30 60 120 ''; do
    "$@" && return 0
    [[ -n $delay ]] || return 1
    echo "fetch_data: '$*' failed; retrying in ${delay}s" >&2
    sleep "$delay"
  done
}

# A user-wide core.autocrlf would rewrite line endings and break the checksums.
g() { git -c core.autocrlf=false "$@"; }

verify() {
  local sums report ok missing different sha
  sums=$(sed -n '/<!-- checksums:begin -->/,/<!-- checksums:end -->/p' "$doc" |
         grep -E '^[0-9a-f]{64}  ') || die "no checksum block in $doc"
  [[ -d $dest ]] || die "data folder $dest does not exist"
  if command -v sha256sum >/dev/null; then sha=(sha256sum); else sha=(shasum -a 256); fi
  report=$(cd "$dest" && "${sha[@]}" -c - <<<"$sums" 2>/dev/null) || true
  ok=$(grep -c ': OK$' <<<"$report") || true
  missing=$(grep ': FAILED open or read$' <<<"$report" | sed 's/: FAILED open or read$//') || true
  different=$(grep ': FAILED$' <<<"$report" | sed 's/: FAILED$//') || true
  [[ -z $missing ]] || sed 's/^/missing:   /' <<<"$missing"
  [[ -z $different ]] || sed 's/^/different: /' <<<"$different"
  echo "$ok files ok, $(grep -c . <<<"$missing") missing, $(grep -c . <<<"$different") different ($dest)"
  [[ -z $missing && -z $different ]]
}

# Both snapshot functions read $repo, $commit and $paths and fill the folder $out.
snapshot_local() {
  local dir=$sources/${repo/\//+} candidate gitdir=""
  [[ -d $dir ]] || die "no snapshot of $repo in $sources (expected a folder ${repo/\//+})"
  for candidate in "$dir/.git" "$dir/repo" "$dir"; do
    if git --git-dir="$candidate" rev-parse --git-dir >/dev/null 2>&1; then
      gitdir=$candidate
      break
    fi
  done
  if [[ -z $gitdir ]]; then
    ln -s "$dir" "$out"  # a plain folder is trusted to hold the files at $commit
    return
  fi
  git --git-dir="$gitdir" rev-parse -q --verify "$commit^{commit}" >/dev/null ||
    die "$gitdir lacks the pinned commit $commit of $repo"
  mkdir -p "$out"
  g --git-dir="$gitdir" archive "$commit" -- "${paths[@]}" | tar -x -C "$out"
}

snapshot_remote() {
  g -c init.defaultBranch=main init -q "$out"
  g -C "$out" remote add origin "$git_base/$repo.git"
  g -C "$out" config remote.origin.promisor true
  g -C "$out" config remote.origin.partialclonefilter blob:none
  g -C "$out" config core.sparseCheckout true
  printf '/%s\n' "${paths[@]}" >"$out/.git/info/sparse-checkout"
  retry g -C "$out" fetch -q --no-tags --depth 1 --filter=blob:none origin "$commit"
  # The checkout downloads the blobs of the sparse paths in one batch.
  retry g -C "$out" checkout -q --detach "$commit"
}

verify_only=0 sources="" dest=""
while (($#)); do
  case $1 in
    --verify) verify_only=1 ;;
    --sources) [[ $# -ge 2 ]] || die "--sources needs a folder"; sources=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z $dest ]] || die "only one DEST, please"; dest=$1 ;;
  esac
  shift
done
dest=${dest:-${FAULTLINE_DATA_DIR:-}}
[[ -n $dest ]] || die "no data folder: pass DEST or set FAULTLINE_DATA_DIR (the data_dir setting)"

if ((verify_only)); then
  verify
  exit
fi

for tool in git tar python3; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
case "$(python3 -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$dest")/" in
  "$repo_root"/*) die "$dest is inside the repository; the data must stay outside it (licences)" ;;
esac
mkdir -p "$dest"
[[ -z $sources ]] || sources=$(cd "$sources" && pwd) || die "--sources $sources: no such folder"

work=$(mktemp -d "${TMPDIR:-/tmp}/faultline-data.XXXXXX")
trap 'rm -rf "$work"' EXIT
manifest=$(python3 "$convert" sources)
while read -r repo commit rest; do
  read -ra paths <<<"$rest"
  out=$work/${repo/\//+}
  echo "fetch_data: $repo @ ${commit:0:12}" >&2
  if [[ -n $sources ]]; then snapshot_local; else snapshot_remote; fi
done <<<"$manifest"

python3 "$convert" build "$work" "$dest"
verify
