#!/usr/bin/env bash
# No include or call cycle between the files of kmod/ (scripts/check-cycles.sh):
# the includes always, the calls over kbuild's objects of gpuext.ko when it
# was built (KDIR present). The core reaches backends only through their ops,
# so no core object may use the simulator's symbols either.
set -u
BUILD=${BUILD:-build}
# the objects kmod/Kbuild links into gpuext.ko, where kmod/build.mk builds them
objs=$(for o in $(sed -n 's/^gpuext-y *:= *//p' kmod/Kbuild); do echo "$BUILD/kmod/$o"; done)
[ -f "$BUILD/kmod/gpuext.ko" ] || objs=""
[ -n "$objs" ] || echo "# gpuext.ko not built (no kernel headers): includes only"
# shellcheck disable=SC2086
scripts/check-cycles.sh kmod $objs
rc=$?
[ -n "$objs" ] || exit $rc
core=$(for o in $objs; do case $o in */gpuext_sim.o | */gpuext_main.o) ;; *) echo "$o" ;; esac; done)
# shellcheck disable=SC2086
bad=$(for o in $core; do nm "$o" | awk -v o="$(basename "$o")" '$1 == "U" && $2 ~ /^gx_sim_/ { print o ": " $2 }'; done)
if [ -n "$bad" ]; then
	echo "not ok - kmod core calls the simulator directly: $(echo $bad)"
	exit 1
fi
echo "ok - kmod core (all but gpuext_sim.o, gpuext_main.o) uses no gx_sim_ symbol"
exit $rc
