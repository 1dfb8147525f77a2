# What a results folder's environment says it was made from: the checked-out tree's commit (with "(with local
# changes)" when it has any) and the commit the tileforge build names itself (`tileforge --version`, generated at
# build time by cmake/build_commit.cmake), which differ when a build made elsewhere is carried to this machine.
#   source scripts/lib/provenance.sh; commit_line [TILEFORGE]      (default build/tileforge)
commit_line() {
  local tree dirty="" build
  tree=$(git rev-parse --verify -q HEAD 2>/dev/null) || tree=unknown
  git status --porcelain 2>/dev/null | grep -q . && dirty=" (with local changes)"
  build=$("${1:-build/tileforge}" --version 2>/dev/null || echo "none")
  echo "commit: $tree$dirty; build: $build"
}
