#!/usr/bin/env bash
# Every tracked .c/.h file is clang-formatted (.clang-format, clang-format-19
# --dry-run -Werror), except the files listed in
# tests/common/clang-format.exclude: those were not clean when the check came
# in. A file on that list that has become clean is reported, so the list only
# shrinks; a listed file that no longer exists is ignored.
#
#   clang-format-19 -i FILE        format a file (then drop it from the list)
set -u
CF=${CLANG_FORMAT:-clang-format-19}
excl=tests/common/clang-format.exclude
if ! command -v "$CF" >/dev/null; then
	echo "not ok - clang-format: $CF not found (make deps installs clang-format-19)"
	exit 1
fi
bad="" n=0 skipped=0 cleaned=""
while IFS= read -r f; do
	[ -f "$f" ] || continue
	if grep -qxF "$f" "$excl"; then
		skipped=$((skipped + 1))
		"$CF" --dry-run -Werror "$f" >/dev/null 2>&1 && cleaned="$cleaned $f"
		continue
	fi
	n=$((n + 1))
	"$CF" --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done < <(git ls-files '*.c' '*.h')
if [ -n "$bad" ]; then
	echo "not ok - clang-format: not formatted (clang-format-19 -i FILE):$bad"
else
	echo "ok - clang-format: $n files formatted ($skipped on the exclusion list)"
fi
if [ -n "$cleaned" ]; then
	echo "not ok - clang-format: clean now, remove from $excl:$cleaned"
else
	echo "ok - clang-format: every file on the exclusion list still needs it"
fi
