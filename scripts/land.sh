#!/usr/bin/env bash
# Land this worktree's branch on main (used when several people work side by
# side in git worktrees): merge main in, build, fast-forward main.
# Run `make test` (or your part's tests) before; this only re-checks the build.
set -euo pipefail
branch=$(git rev-parse --abbrev-ref HEAD)
[ "$branch" != main ] || { echo "land: already on main" >&2; exit 1; }
main_wt=$(git worktree list --porcelain | awk '/^worktree /{w=$2} /^branch refs\/heads\/main$/{print w}')
[ -n "$main_wt" ] || { echo "land: no worktree has main checked out" >&2; exit 1; }
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "land: commit first" >&2; exit 1; }
exec 9>"$(git rev-parse --git-common-dir)/land.lock"
flock 9
git merge --no-edit main || { echo "land: resolve the conflicts, commit, and run again" >&2; exit 1; }
make -s all >/dev/null || { echo "land: build broken after merging main; fix and run again" >&2; exit 1; }
git -C "$main_wt" merge --ff-only "$branch"
echo "land: main is now $(git rev-parse --short HEAD)"
