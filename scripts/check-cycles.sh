#!/usr/bin/env bash
# check-cycles.sh FOLDER [OBJ...] — no cycle between the files of a part.
#
# Includes: an edge A -> B for every `#include "B"` in FOLDER's .c/.h files
# that names a file of FOLDER (by path relative to FOLDER or the repository
# root, or by base name). Calls: an edge A.o -> B.o when A.o leaves undefined
# a global symbol that B.o defines (nm). Either graph with a cycle is a
# failure, printed as the cycle. Prints ok/not ok lines (tests/README.md).
#
#   scripts/check-cycles.sh kmod build/kmod/gpuext_*.o
set -u
folder=${1:?usage: check-cycles.sh FOLDER [OBJ...]}
folder=${folder%/}
shift
NM=${NM:-nm}
rc=0

# find_cycle: reads "from to" edges on stdin, prints one cycle (names joined
# by " -> ") or nothing.
find_cycle() {
	awk '
	{ if ($1 != $2) { adj[$1] = adj[$1] " " $2; nodes[$1]; nodes[$2] } }
	function dfs(n,    i, k, m, parts) {
		state[n] = 1; stack[++depth] = n
		k = split(adj[n], parts, " ")
		for (i = 1; i <= k; i++) {
			m = parts[i]
			if (state[m] == 1) {
				for (j = 1; stack[j] != m; j++)
					;
				out = m
				for (j++; j <= depth; j++)
					out = out " -> " stack[j]
				out = out " -> " m
				return 1
			}
			if (!state[m] && dfs(m)) return 1
		}
		state[n] = 2; depth--
		return 0
	}
	END { for (n in nodes) if (!state[n] && dfs(n)) { print out; exit } }'
}

# Includes.
files=$(cd "$folder" 2>/dev/null && find . -name '*.[ch]' | sed 's|^\./||' | sort)
if [ -z "$files" ]; then
	echo "not ok - cycles: $folder has no .c/.h files"
	exit 1
fi
edges=$(for f in $files; do
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$folder/$f" | while read -r inc; do
		for cand in "$(dirname "$f")/$inc" "${inc#"$folder"/}" "$inc"; do
			cand=${cand#./}
			if [ -f "$folder/$cand" ]; then
				echo "$f $cand"
				break
			fi
		done
	done
done | sort -u)
cyc=$(find_cycle <<<"$edges")
n=$(grep -c . <<<"$edges")
if [ -n "$cyc" ]; then
	echo "not ok - cycles: $folder includes: $cyc"
	rc=1
else
	echo "ok - cycles: $folder: no include cycle ($n includes between its files)"
fi

# Calls (symbols between objects).
[ $# -eq 0 ] && exit $rc
for o in "$@"; do
	if [ ! -f "$o" ]; then
		echo "not ok - cycles: object $o missing"
		exit 1
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in "$@"; do
	b=$(basename "$o")
	"$NM" "$o" | awk '$1 != "U" && NF == 3 && $2 ~ /^[A-TV-Z]$/ { print $3 }' | sort -u >"$tmp/$b.def"
	"$NM" "$o" | awk '$1 == "U" { print $2 }' | sort -u >"$tmp/$b.und"
done
edges=$(for o in "$@"; do
	a=$(basename "$o")
	for p in "$@"; do
		b=$(basename "$p")
		[ "$a" = "$b" ] && continue
		s=$(comm -12 "$tmp/$a.und" "$tmp/$b.def" | head -1)
		[ -n "$s" ] && echo "$a $b"
	done
done)
cyc=$(find_cycle <<<"$edges")
n=$(grep -c . <<<"$edges")
if [ -n "$cyc" ]; then
	echo "not ok - cycles: $folder objects call in a cycle: $cyc"
	rc=1
else
	echo "ok - cycles: $folder: no call cycle between its $# objects ($n uses)"
fi
exit $rc
